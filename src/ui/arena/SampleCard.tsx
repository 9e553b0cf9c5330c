import type { Message, RewardTerms, Verdict } from '../../contract/report';
import type { SampleEntry } from '../../store/runStore';
import { TokenText } from '../heatmap/TokenText';
import type { Vocabulary } from '../../contract/vocabulary';

export type VerdictKind = 'unsafe' | 'refusal' | 'benign';

export function verdictKind(v: Verdict): VerdictKind {
  if (v.refused) return 'refusal';
  return v.unsafe >= 0.5 ? 'unsafe' : 'benign';
}

export function VerdictBadge({ verdict, vocab }: { verdict: Verdict; vocab: Vocabulary }) {
  // Only a world with a judge's harm score colours the badge by it; elsewhere the label alone.
  const kind = vocab.score ? verdictKind(verdict) : 'benign';
  return (
    <span
      className={`verdict verdict-${kind}`}
      data-testid="verdict"
      data-kind={kind}
      title={vocab.score ? `judge: ${vocab.score} = ${verdict.unsafe.toFixed(2)}` : undefined}
    >
      {verdict.label}
      {vocab.score && (
        <span className="verdict-p">
          {' '}
          · {vocab.score} {verdict.unsafe.toFixed(2)}
        </span>
      )}
    </span>
  );
}

/** The rollout's outcome in its world's words, coloured by what a success is there; null where there is none. */
function Outcome({ verdict, vocab }: { verdict: Verdict; vocab: Vocabulary }) {
  if (!vocab.outcome) return null;
  const tone = verdict.success ? (vocab.successTone === 'harm' ? 'hit' : 'good') : 'miss';
  return (
    <span className={`outcome outcome-${tone}`} data-testid="outcome" data-tone={tone}>
      {verdict.outcome ?? (verdict.success ? vocab.outcome[0] : vocab.outcome[1])}
    </span>
  );
}

/** The reward and its additive terms, each as a bar either side of zero. */
export function RewardBreakdown({ reward, terms }: { reward: number; terms: RewardTerms }) {
  const entries = Object.entries(terms).filter((e): e is [string, number] => typeof e[1] === 'number');
  const maxAbs = Math.max(1e-9, ...entries.map(([, v]) => Math.abs(v)));
  return (
    <table className="terms" aria-label={`Reward ${reward.toFixed(3)} broken into its terms`}>
      <tbody>
        <tr className="terms-total">
          <th scope="row">reward</th>
          <td colSpan={2} className="num">
            {reward.toFixed(3)}
          </td>
        </tr>
        {entries.map(([name, v]) => {
          const w = `${(Math.abs(v) / maxAbs) * 50}%`;
          return (
            <tr
              key={name}
              // The KL term is −β · KL: above zero, the sampled (k1) KL estimate of this rollout is negative.
              title={
                name === 'kl' && v > 0
                  ? "KL estimate below zero: one rollout's sampled k1 estimate (log π − log π_ref per token) can be negative; the true KL cannot"
                  : undefined
              }
            >
              <th scope="row">{name}</th>
              <td className="term-bar" aria-hidden="true">
                <span
                  className={v >= 0 ? 'bar-pos' : 'bar-neg'}
                  style={v >= 0 ? { left: '50%', width: w } : { right: '50%', width: w }}
                />
              </td>
              <td className="num">
                {v >= 0 ? '+' : '−'}
                {Math.abs(v).toFixed(3)}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

const ROLE_SIDE: Record<Message['role'], 'left' | 'right' | 'centre'> = {
  attacker: 'left',
  user: 'left',
  system: 'centre',
  defender: 'right',
  assistant: 'right',
  monitor: 'centre',
  judge: 'centre',
};

function roleLabel(m: Message, turn: number, multiTurn: boolean, vocab: Vocabulary): string {
  const role = vocab.roles?.[m.role] ?? m.role;
  return multiTurn ? `${role} · turn ${turn}` : role;
}

/** One rollout as a conversation, with verdict, reward terms and a pin button. */
export function SampleCard({
  entry,
  scaleMax,
  pinned,
  onPin,
  vocab,
}: {
  entry: SampleEntry;
  scaleMax: number;
  pinned: boolean;
  onPin(key: string | null): void;
  /** The words of the run's recipe (contract/vocabulary.ts). */
  vocab: Vocabulary;
}) {
  const s = entry.sample;
  // Turns are numbered where several prompts open them; attacker-sft's attacker answers its goal
  // (one exchange), so its card read "goal · turn 1", "greedy sample · turn 2".
  const multiTurn =
    vocab.world !== 'sft' && s.messages.filter((m) => m.role === 'attacker' || m.role === 'user').length > 1;
  let turn = 0;
  return (
    <article
      className={`sample${pinned ? ' pinned' : ''}`}
      data-testid="sample"
      data-prompt-key={s.promptKey}
      data-success={s.verdict.success}
    >
      <header className="sample-head">
        <VerdictBadge verdict={s.verdict} vocab={vocab} />
        <Outcome verdict={s.verdict} vocab={vocab} />
        <span className="small sample-meta">
          {[
            s.tactic,
            s.category,
            `group ${s.group}`,
            s.advantage !== undefined ? `advantage ${s.advantage.toFixed(2)}` : null,
          ]
            .filter(Boolean)
            .join(' · ')}
        </span>
        <button
          type="button"
          className="pin"
          aria-pressed={pinned}
          data-testid="pin"
          onClick={() => onPin(pinned ? null : s.promptKey)}
          title={pinned ? 'Stop following this prompt' : 'Follow this prompt across steps (entropy matrix below)'}
        >
          {pinned ? 'Pinned' : 'Pin'}
        </button>
      </header>
      <div className="sample-body">
        <ol className="conversation">
          {s.messages.map((m, i) => {
            if (m.role === 'attacker' || m.role === 'user') turn++;
            return (
              <li key={i} className={`msg msg-${ROLE_SIDE[m.role]} role-${m.role}`} data-testid="message">
                <div className="msg-role">
                  {roleLabel(m, Math.max(1, turn), multiTurn, vocab)}
                  {m.turnScore !== undefined && (
                    <span className="turn-score"> · turn score {m.turnScore.toFixed(2)}</span>
                  )}
                  {!m.tokens && (
                    <span className="small" data-testid="message-source">
                      {m.writtenBy ? ` · written by ${m.writtenBy}` : ' · scripted'}
                    </span>
                  )}
                </div>
                {m.tokens && m.tokens.pieces.length > 0 ? (
                  <TokenText tokens={m.tokens} scaleMax={scaleMax} label={`${m.role} message`} />
                ) : (
                  <div className="msg-text">{m.text}</div>
                )}
              </li>
            );
          })}
        </ol>
        {vocab.reward && <RewardBreakdown reward={s.reward} terms={s.terms} />}
      </div>
      <footer className="small prompt-key">
        prompt <code>{s.promptKey}</code>
      </footer>
    </article>
  );
}
