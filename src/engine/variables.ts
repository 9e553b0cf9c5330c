// tf.variable(init) keeps `init` alive as a second tensor on the same data (the variable holds
// its own reference); creating variables through here drops that extra tensor, so a run that is
// disposed leaves nothing behind.
import * as tf from '@tensorflow/tfjs';

export function variableFrom<R extends tf.Rank>(init: tf.Tensor<R>, trainable = true, name?: string): tf.Variable<R> {
  const v = tf.variable(init, trainable, name);
  init.dispose();
  return v;
}
