/** The frame of the sign-in and sign-up pages. */
import type { ReactNode } from 'react';

export function AuthFrame({ title, subtitle, children, footer }: { title: string; subtitle: string; children: ReactNode; footer: ReactNode }) {
  return (
    <div className="auth-page">
      <div className="auth-card">
        <div className="brand large">
          <img src="/favicon.svg" alt="" width={36} height={36} />
          <span>Audit Ledger</span>
        </div>
        <h1>{title}</h1>
        <p className="muted">{subtitle}</p>
        {children}
        <div className="auth-footer">{footer}</div>
      </div>
    </div>
  );
}
