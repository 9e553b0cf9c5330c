import type { ReactNode } from 'react';

export function Panel({ id, title, children }: { id: string; title: string; children: ReactNode }) {
  return (
    <section className="panel" data-testid={`panel-${id}`} aria-labelledby={`panel-${id}-title`}>
      <h2 id={`panel-${id}-title`}>{title}</h2>
      {children}
    </section>
  );
}
