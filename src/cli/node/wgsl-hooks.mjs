// Node module hooks: `*.wgsl?raw` resolves to the file and loads as a module whose default
// export is the file's text.
import { readFile } from 'node:fs/promises';

const isWgsl = (url) => new URL(url).pathname.endsWith('.wgsl');

export async function resolve(specifier, context, next) {
  if (/\.wgsl(\?raw)?$/.test(specifier) && context.parentURL) {
    return { url: new URL(specifier, context.parentURL).href, shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url.startsWith('file:') && isWgsl(url)) {
    const file = new URL(url);
    file.search = '';
    const text = await readFile(file, 'utf8');
    return { format: 'module', source: `export default ${JSON.stringify(text)};`, shortCircuit: true };
  }
  return next(url, context);
}
