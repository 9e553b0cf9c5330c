// Dataset rows in the layout veRL's RLHFDataset reads (its examples' gsm8k preprocessing writes
// the same): `prompt` a list of {role, content} structs, `data_source`, `ability`,
// `reward_model` {style, ground_truth}, `extra_info` {split, index, ...}. Written with
// hyparquet-writer: pure JavaScript (no native code, no WASM), so the CLI and the browser share
// it, and it writes nested list / struct columns, which RLHFDataset needs for chat prompts.
import { parquetWriteBuffer } from 'hyparquet-writer';
import type { DatasetRow } from './entry';

const str = (name: string) => ({
  name,
  type: 'BYTE_ARRAY' as const,
  converted_type: 'UTF8' as const,
  repetition_type: 'OPTIONAL' as const,
});

/** The parquet schema of DatasetRow (3-level LIST of a struct, as pyarrow writes list<struct>). */
const schema = (interaction: boolean) => [
  { name: 'root', num_children: 5 },
  str('data_source'),
  { name: 'prompt', repetition_type: 'OPTIONAL' as const, converted_type: 'LIST' as const, num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED' as const, num_children: 1 },
  { name: 'element', repetition_type: 'OPTIONAL' as const, num_children: 2 },
  str('role'),
  str('content'),
  str('ability'),
  { name: 'reward_model', repetition_type: 'OPTIONAL' as const, num_children: 2 },
  str('style'),
  str('ground_truth'),
  { name: 'extra_info', repetition_type: 'OPTIONAL' as const, num_children: interaction ? 5 : 4 },
  str('split'),
  { name: 'index', type: 'INT32' as const, repetition_type: 'OPTIONAL' as const },
  str('prompt_id'),
  str('prompt_text'),
  // Multi-turn rows: veRL's agent loop passes extra_info.interaction_kwargs to the interaction.
  ...(interaction
    ? [
        { name: 'interaction_kwargs', repetition_type: 'OPTIONAL' as const, num_children: 2 },
        str('name'),
        str('episode'),
      ]
    : []),
];

const COLUMNS = ['data_source', 'prompt', 'ability', 'reward_model', 'extra_info'] as const;

/** The rows as one parquet file. */
export function rowsToParquet(rows: readonly DatasetRow[]): Uint8Array {
  if (rows.length === 0) throw new Error('parquet: no rows to write');
  const columnData = COLUMNS.map((name) => ({ name, data: rows.map((r) => r[name]) as unknown[] }));
  const interaction = rows.some((r) => r.extra_info.interaction_kwargs);
  if (interaction && !rows.every((r) => r.extra_info.interaction_kwargs))
    throw new Error('parquet: interaction_kwargs must be on every row or none');
  const buf = parquetWriteBuffer({
    columnData: columnData as never,
    schema: schema(interaction) as never,
    createdBy: 'sparring (hyparquet-writer)',
  });
  return new Uint8Array(buf);
}
