// A model folder on the local disk, with the methods the model loader needs (src/model/load.ts).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ModelFolder } from '../model/load';

export class FolderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FolderError';
  }
}

export function folderSource(dir: string): ModelFolder {
  const root = resolve(dir);
  if (!existsSync(root)) throw new FolderError(`model folder ${dir} does not exist`);
  if (!statSync(root).isDirectory()) throw new FolderError(`model folder ${dir} is not a directory`);
  const path = (name: string) => {
    if (name.split('/').some((p) => p === '..' || p === ''))
      throw new FolderError(`${dir}: bad file name ${JSON.stringify(name)}`);
    return join(root, name);
  };
  const read = (name: string) => {
    const p = path(name);
    if (!existsSync(p)) throw new FolderError(`${dir}/${name}: not found`);
    return readFileSync(p);
  };
  return {
    label: dir,
    has: async (name) => existsSync(path(name)),
    getBytes: async (name) => {
      const b = read(name);
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
    },
    getText: async (name) => read(name).toString('utf8'),
  };
}
