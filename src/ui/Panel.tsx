import type { ReactNode } from 'react';
import { ErrorBoundary } from './ErrorBoundary';

export function Panel({ id, title, children }: { id: string; title: string; children: ReactNode }) {
  return (
    <section className="panel" data-testid={`panel-${id}`} aria-labelledby={`panel-${id}-title`}>
      <h2 id={`panel-${id}-title`}>{title}</h2>
      <ErrorBoundary what={`the ${title} panel`}>{children}</ErrorBoundary>
    </section>
  );
}
