// SwiGLU's gate, elementwise: result = silu(g) * u = g * sigmoid(g) * u. Three stock kernels
// (sigmoid, two multiplies) become one; it runs once per layer.
// Bindings from tfjs's header: g, u, uniforms.size.

fn main(index : i32) {
  if (index >= uniforms.size) {
    return;
  }
  let a = g[index];
  result[index] = a / (1.0 + exp(-a)) * u[index];
}
