// GeGLU's gate, elementwise (Gemma 3's MLP): result = gelu_tanh(g) * u with
// gelu_tanh(a) = a / 2 (1 + tanh(sqrt(2 / pi) (a + 0.044715 a^3))). Nine stock kernels become one.
// The tanh argument is clamped to +-15 (tanh is 1 to float32 there) so that no driver's exp-based
// tanh overflows to NaN on a large gate.
// Bindings from tfjs's header: g, u, uniforms.size.

fn main(index : i32) {
  if (index >= uniforms.size) {
    return;
  }
  let a = g[index];
  let t = tanh(clamp(0.7978845608028654 * (a + 0.044715 * a * a * a), -15.0, 15.0));
  result[index] = 0.5 * a * (1.0 + t) * u[index];
}
