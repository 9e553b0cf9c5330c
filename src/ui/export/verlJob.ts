// "veRL job (zip)": the current setup exported as a veRL / TRL job folder by the worker (the same
// generator the CLI uses; the page never runs the exporter). Which recipes export comes from the
// worker's recipe listing.
//
// This branch's worker API does not declare `exportVerl` or `RecipeListing.exportable` yet (the
// merged contract/workerApi.ts does): the two casts below are the only place that knows, and go
// once it is merged.
import { engine } from '../../store/engineStore';
import type { RecipeListing } from '../../worker/protocol';
import type { FileBytes } from '../../worker/storageProtocol';

export interface VerlJob extends FileBytes {
  /** Parts of the setup veRL cannot express (listed in the zip's README). */
  unsupported?: string[];
  /** Whether the sandbox model the recipe trains is in the zip. */
  modelShipped?: boolean;
}

interface VerlExporter {
  exportVerl(recipe: { name: string; schema: RecipeListing['schema'] }, values: Record<string, unknown>, seed: number, steps: number | undefined): Promise<VerlJob>;
}

export function isExportable(recipe: RecipeListing | undefined): boolean {
  return (recipe as (RecipeListing & { exportable?: boolean }) | undefined)?.exportable === true;
}

export function exportVerlJob(recipe: RecipeListing, values: Record<string, unknown>, seed: number, steps: number | undefined): Promise<VerlJob> {
  return (engine() as unknown as VerlExporter).exportVerl({ name: recipe.name, schema: recipe.schema }, values, seed, steps);
}
