// The run setup as the UI holds it: the registered recipes, the chosen one, the form values per
// recipe, seed, max steps, the errors marked on fields (from a link, from the worker), and the
// run's status. The setup panel, the teaching panel and the guided demo all read and drive it.
import { create } from 'zustand';
import type { RecipeListing, RunStatus } from '../contract/workerApi';
import type { CheckpointSummary } from '../contract/storageFormat';
import { formDefaults, type AtMax, type DecodedSetup, type FormValues } from './setupUrl';

/** What the setup knows about whether a model field's model fits this device. */
export interface ModelFit {
  ref: string;
  state: 'checking' | 'fits' | 'too-big' | 'unknown';
  /** One line: parameters and estimated bytes, or why it could not be checked. */
  summary: string;
  problems: string[];
  notes: string[];
  /** The learn step's planned allocation (src/contract/learnMemory.ts), when the recipe trains LoRA. */
  learn?: {
    microBatchRows: number;
    accumulationSteps: number;
    recompute: boolean;
    peakBytes: number;
    buffers: { name: string; scope: 'model' | 'optimizer' | 'micro-batch'; bytes: number; count: number }[];
  };
}

export const IDLE_STATUS: RunStatus = {
  state: 'idle',
  recipe: null,
  seed: null,
  step: 0,
  error: null,
  detail: null,
  stepping: false,
  runId: null,
  numTensors: 0,
};

export interface SetupState {
  recipes: RecipeListing[];
  recipeName: string;
  valuesByRecipe: Record<string, FormValues>;
  seed: string;
  maxSteps: string;
  atMax: AtMax;
  /** Problems found in the link the page was opened with, by field (cleared when the field changes). */
  linkErrors: Record<string, string>;
  /** Refusals of the worker's own validation, by field. */
  workerErrors: Record<string, string>;
  status: RunStatus;
  /**
   * The run that was live before the page reloaded, shown paused at this checkpoint until Resume
   * continues it in the worker (or Stop ends it); null otherwise.
   */
  detached: CheckpointSummary | null;
  /** Start was pressed with invalid fields: the panel names them beside the button until they are fixed. */
  startTried: boolean;
  /** Seed, max steps and "then" were filled by the guided demo: picking another recipe resets them. */
  demoOwned: boolean;
  busy: string | null;
  commandError: string | null;
  /** Finish times (ms) of the live run's latest steps, for steps/s and time left. */
  stepTimes: number[];
  /** The latest step's own time (its report's timings.total_ms): shown before there are two finish times. */
  lastStepMs: number | null;
  /** Recipe and config of the run started last (the teaching panel plugs its weights in). */
  runConfig: { recipe: string; values: FormValues } | null;
  /** Fit checks of the chosen models, by field: shown on the picker and in the device panel. */
  fits: Record<string, ModelFit>;
  setFit(field: string, fit: ModelFit | null): void;
  setRecipes(list: RecipeListing[]): void;
  setRecipe(name: string): void;
  setValue(name: string, v: string | boolean): void;
  resetValues(): void;
  setSeed(seed: string): void;
  setMaxSteps(s: string): void;
  setAtMax(a: AtMax): void;
  applyLink(d: DecodedSetup): void;
  patch(
    p: Partial<
      Pick<
        SetupState,
        | 'status'
        | 'busy'
        | 'commandError'
        | 'workerErrors'
        | 'runConfig'
        | 'stepTimes'
        | 'lastStepMs'
        | 'detached'
        | 'startTried'
        | 'demoOwned'
      >
    >,
  ): void;
  stepDone(time: number): void;
}

const without = (errors: Record<string, string>, ...keys: string[]) => {
  if (!keys.some((k) => k in errors)) return errors;
  const rest = { ...errors };
  for (const k of keys) delete rest[k];
  return rest;
};

/** The form values of a recipe (its defaults until something was typed). */
export function valuesOf(s: Pick<SetupState, 'recipes' | 'valuesByRecipe'>, name: string): FormValues {
  const r = s.recipes.find((x) => x.name === name);
  return s.valuesByRecipe[name] ?? (r ? formDefaults(r.schema) : {});
}

export const useSetup = create<SetupState>()((set) => ({
  recipes: [],
  recipeName: '',
  valuesByRecipe: {},
  seed: '0',
  maxSteps: '',
  atMax: 'pause',
  linkErrors: {},
  workerErrors: {},
  status: IDLE_STATUS,
  detached: null,
  startTried: false,
  demoOwned: false,
  busy: null,
  commandError: null,
  runConfig: null,
  stepTimes: [],
  lastStepMs: null,
  fits: {},
  setFit: (field, fit) =>
    set((s) => {
      const fits = { ...s.fits };
      if (fit) fits[field] = fit;
      else delete fits[field];
      return { fits };
    }),
  setRecipes: (list) =>
    set((s) => ({
      recipes: list,
      recipeName: s.recipeName && list.some((r) => r.name === s.recipeName) ? s.recipeName : (list[0]?.name ?? ''),
    })),
  setRecipe: (recipeName) =>
    set((s) =>
      // The demo's seed and step limit belong to the demo, not to the next recipe picked.
      s.demoOwned && recipeName !== s.recipeName
        ? { recipeName, workerErrors: {}, seed: '0', maxSteps: '', atMax: 'pause', demoOwned: false }
        : { recipeName, workerErrors: {} },
    ),
  setValue: (name, v) =>
    set((s) => ({
      valuesByRecipe: { ...s.valuesByRecipe, [s.recipeName]: { ...valuesOf(s, s.recipeName), [name]: v } },
      workerErrors: without(s.workerErrors, name),
      linkErrors: without(s.linkErrors, name),
    })),
  resetValues: () =>
    set((s) => {
      const r = s.recipes.find((x) => x.name === s.recipeName);
      return r
        ? {
            valuesByRecipe: { ...s.valuesByRecipe, [r.name]: formDefaults(r.schema) },
            workerErrors: {},
            linkErrors: {},
          }
        : {};
    }),
  setSeed: (seed) =>
    set((s) => ({
      seed,
      demoOwned: false,
      workerErrors: without(s.workerErrors, 'seed'),
      linkErrors: without(s.linkErrors, 'seed'),
    })),
  setMaxSteps: (maxSteps) =>
    set((s) => ({
      maxSteps,
      demoOwned: false,
      workerErrors: without(s.workerErrors, 'steps'),
      linkErrors: without(s.linkErrors, 'steps'),
    })),
  setAtMax: (atMax) => set((s) => ({ atMax, demoOwned: false, linkErrors: without(s.linkErrors, 'at') })),
  applyLink: (d) =>
    set((s) => ({
      recipeName: s.recipes.some((r) => r.name === d.setup.recipe) ? d.setup.recipe : s.recipeName,
      valuesByRecipe: d.errors.recipe ? s.valuesByRecipe : { ...s.valuesByRecipe, [d.setup.recipe]: d.setup.values },
      seed: d.setup.seed,
      maxSteps: d.setup.maxSteps,
      atMax: d.setup.atMax,
      linkErrors: d.errors,
      workerErrors: {},
      demoOwned: false,
    })),
  patch: (p) => set(p),
  stepDone: (time) => set((s) => ({ stepTimes: [...s.stepTimes.slice(-19), time] })),
}));
