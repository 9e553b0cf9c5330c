// Model folders the user picked from disk (<input webkitdirectory>), by folder name, for this tab.
// The page reads their config.json for the fit check and hands the files to the engine worker
// when the worker can take them (registerLocalModel).

const folders = new Map<string, Map<string, File>>();

/** Keeps a picked folder's top-level files under its name; returns the name. */
export function putLocalFolder(files: ArrayLike<File>): string {
  const list = Array.from(files);
  if (list.length === 0) throw new Error('the picked folder is empty');
  // webkitRelativePath is "folder/file" (or "folder/sub/file": sub-folders are not model files).
  const first = (list[0] as File & { webkitRelativePath?: string }).webkitRelativePath ?? '';
  const name = first.split('/')[0] || 'folder';
  const byName = new Map<string, File>();
  for (const f of list) {
    const rel = ((f as File & { webkitRelativePath?: string }).webkitRelativePath ?? f.name).split('/');
    if (rel.length <= 2) byName.set(rel[rel.length - 1], f);
  }
  if (!byName.has('config.json')) throw new Error(`the folder "${name}" has no config.json: pick a Hugging Face model folder (config.json, tokenizer.json, *.safetensors)`);
  folders.set(name, byName);
  return name;
}

export function localFolderFile(folder: string, file: string): File | undefined {
  return folders.get(folder)?.get(file);
}

export function localFolderFiles(folder: string): File[] {
  return [...(folders.get(folder)?.values() ?? [])];
}
