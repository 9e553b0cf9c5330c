// Node module hooks: `*.wgsl?raw` and `*.py?raw` resolve to the file and load as a module whose default
// export is the file's text.
import { readFile } from 'node:fs/promises';

const isWgsl = (url) => /\.(wgsl|py)$/.test(new URL(url).pathname);

export async function resolve(specifier, context, next) {
  if (/\.(wgsl(\?raw)?|py\?raw)$/.test(specifier) && context.parentURL) {
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
