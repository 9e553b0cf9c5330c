// MinMax Monitor-vs-LLM: policy answers, monitor critiques and gives a verdict. The policy's
// payoff R, the monitor's fidelity F (constraint F <= delta, enforced by dual ascent on lambda),
// the monitor's reward, and the two-timescale (TTUR) update schedule. Defaults from its code.

export const MINMAX_DEFAULTS = {
  lambda0: 10,
  dualStep: 0.25,
  delta: -3.6,
  lambdaMax: 30,
  /** Reward-model scores are clamped to +-15. */
  rmClamp: 15,
  /** TTUR: monitor PPO steps per policy step, and their learning rates. */
  monitorStepsPerPolicy: 5,
  monitorLr: 4e-6,
  policyLr: 1e-6,
} as const;

export type Verdict = 'correct' | 'incorrect' | 'unclear';

const clamp = (x: number, lo: number, hi: number) => Math.min(Math.max(x, lo), hi);

/** Verdict as a probability of "correct" for the fidelity MSE: 1 / 0 / 0.2 (unclear). */
export function verdictValue(v: Verdict): number {
  return v === 'correct' ? 1 : v === 'incorrect' ? 0 : 0.2;
}

/** J, the judge sign: +1 correct, -1 incorrect, 0 unclear. */
export function judgeSign(v: Verdict): number {
  return v === 'correct' ? 1 : v === 'incorrect' ? -1 : 0;
}

/** Policy reward R = 0.5 clamp(RM(O), -15, 15) + 0.5 x 5 x J. */
export function minmaxPolicyReward(rmScore: number, verdict: Verdict): number {
  return 0.5 * clamp(rmScore, -MINMAX_DEFAULTS.rmClamp, MINMAX_DEFAULTS.rmClamp) + 0.5 * 5 * judgeSign(verdict);
}

/**
 * Fidelity over a batch: F = 0.6 x 15 x MSE(verdict, truth) + 0.4 x (-clamp(mean RM(critique), -15, 15)).
 * verdicts, truths (1 if the policy's answer is actually correct, else 0), critiqueRm: [N].
 * Lower is better (constraint F <= delta). Call with one element for a per-sample F.
 */
export function minmaxFidelity(
  verdicts: ArrayLike<Verdict>,
  truths: ArrayLike<number>,
  critiqueRm: ArrayLike<number>,
): number {
  const n = verdicts.length;
  if (n === 0 || truths.length !== n || critiqueRm.length !== n) {
    throw new Error(
      `minmaxFidelity: need equal, non-empty verdicts, truths and critique scores (got ${n}, ${truths.length}, ${critiqueRm.length})`,
    );
  }
  let se = 0;
  let rm = 0;
  for (let i = 0; i < n; i++) {
    se += (verdictValue(verdicts[i]) - truths[i]) ** 2;
    rm += critiqueRm[i];
  }
  return 0.6 * 15 * (se / n) + 0.4 * -clamp(rm / n, -MINMAX_DEFAULTS.rmClamp, MINMAX_DEFAULTS.rmClamp);
}

/** Dual ascent: lambda <- clip(lambda + step (mean F - delta), 0, lambda_max). */
export function dualAscentStep(
  lambda: number,
  meanFidelity: number,
  opts: { step?: number; delta?: number; lambdaMax?: number } = {},
): number {
  const step = opts.step ?? MINMAX_DEFAULTS.dualStep;
  const delta = opts.delta ?? MINMAX_DEFAULTS.delta;
  // Math.min / max pass NaN through: one NaN fidelity would make lambda NaN for good.
  if (!Number.isFinite(lambda) || !Number.isFinite(meanFidelity))
    throw new Error(`dual ascent: lambda ${lambda}, mean fidelity ${meanFidelity}: both must be finite`);
  return clamp(lambda + step * (meanFidelity - delta), 0, opts.lambdaMax ?? MINMAX_DEFAULTS.lambdaMax);
}

/**
 * Monitor reward, two variants:
 * - `code` (its implementation, the default): -10 J - lambda F
 * - `readme` (the payoff as described): -R - lambda F, R the policy reward
 */
export function minmaxMonitorReward(
  parts: { verdict: Verdict; fidelity: number; policyReward?: number },
  lambda: number,
  variant: 'code' | 'readme' = 'code',
): number {
  if (variant === 'code') return -10 * judgeSign(parts.verdict) - lambda * parts.fidelity;
  if (parts.policyReward === undefined) throw new Error('minmaxMonitorReward: the readme variant needs policyReward');
  return -parts.policyReward - lambda * parts.fidelity;
}

export interface TturOptions {
  /** k monitor updates per policy update. Default 5. */
  monitorStepsPerPolicy?: number;
  monitorLr?: number;
  policyLr?: number;
}

/**
 * Two-timescale schedule as a pure function of the global update index (0-based): each cycle is
 * k monitor updates then 1 policy update, each player at its own learning rate.
 */
export function tturSchedule(
  step: number,
  opts: TturOptions = {},
): { player: 'monitor' | 'policy'; lr: number; cycle: number; phase: number } {
  const k = opts.monitorStepsPerPolicy ?? MINMAX_DEFAULTS.monitorStepsPerPolicy;
  if (!Number.isInteger(k) || k < 0) throw new Error(`monitorStepsPerPolicy must be a non-negative integer (got ${k})`);
  const cycle = Math.floor(step / (k + 1));
  const phase = step - cycle * (k + 1);
  return phase < k
    ? { player: 'monitor', lr: opts.monitorLr ?? MINMAX_DEFAULTS.monitorLr, cycle, phase }
    : { player: 'policy', lr: opts.policyLr ?? MINMAX_DEFAULTS.policyLr, cycle, phase };
}
