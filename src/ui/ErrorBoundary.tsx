// The last line of defence against a value no parser caught: a render error in one part of the
// lab shows the error and a way back in that part instead of unmounting the whole page (a setup
// link with a malformed percent escape once left an empty page). The message is cut, since the
// value that caused it may be huge.
import { Component, type ReactNode } from 'react';
import { briefText } from '../contract/brief';

interface Props {
  /** What the boundary guards, in words ("the Run panel"). */
  what: string;
  children: ReactNode;
}

export class ErrorBoundary extends Component<Props, { error: Error | null }> {
  state: { error: Error | null } = { error: null };

  static getDerivedStateFromError(error: unknown) {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }

  render() {
    const { error } = this.state;
    if (!error) return this.props.children;
    return (
      <div className="error-boundary" role="alert" data-testid="error-boundary">
        <p>
          Something in {this.props.what} could not be shown: {briefText(error.message, 300)}
        </p>
        <button type="button" onClick={() => this.setState({ error: null })}>
          Try again
        </button>{' '}
        <button type="button" onClick={() => window.location.assign(window.location.pathname)}>
          Open the lab without the link
        </button>
      </div>
    );
  }
}
