import * as tf from '@tensorflow/tfjs';

// Every unit test runs on the deterministic CPU backend, whatever Node has installed.
await tf.setBackend('cpu');
await tf.ready();
