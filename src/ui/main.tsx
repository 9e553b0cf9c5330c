import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { ErrorBoundary } from './ErrorBoundary';
import { UpdatePrompt } from './offline/UpdatePrompt';
import './styles.css';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <UpdatePrompt />
    <ErrorBoundary what="the lab">
      <App />
    </ErrorBoundary>
  </StrictMode>,
);
