// "veRL job (zip)": the current setup exported as a veRL / TRL job folder by the worker (the same
// generator the CLI uses; the page never runs the exporter). Which recipes export comes from the
// worker's recipe listing.
import { engine } from '../../store/engineStore';
import type { RecipeListing, VerlJobZip } from '../../contract/workerApi';

export type VerlJob = VerlJobZip;

export function isExportable(recipe: RecipeListing | undefined): boolean {
  return recipe?.exportable === true;
}

export function exportVerlJob(
  recipe: RecipeListing,
  values: Record<string, unknown>,
  seed: number,
  steps: number | undefined,
): Promise<VerlJob> {
  return engine().exportVerl(recipe.name, values, seed, steps);
}
