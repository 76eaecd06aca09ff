/** Invitation mail, through nodemailer to the SMTP server of SMTP_URL; without it no mail is sent (links are shown instead). */
import { createTransport, type Transporter } from 'nodemailer';
import type { Role } from '../domain/roles';

export interface InvitationMail {
  to: string;
  organization: string;
  role: Role;
  url: string;
  expiresAt: Date;
  invitedBy: string;
}

export class Mailer {
  private readonly transport: Transporter;

  constructor(smtpUrl: string, private readonly from: string) {
    this.transport = createTransport(smtpUrl);
  }

  async sendInvitation(mail: InvitationMail): Promise<void> {
    await this.transport.sendMail({
      from: this.from,
      to: mail.to,
      subject: `You are invited to ${mail.organization} on Audit Ledger`,
      text: [
        `${mail.invitedBy} invited you to join ${mail.organization} as ${mail.role}.`,
        '',
        `Accept: ${mail.url}`,
        '',
        `The link works once and expires at ${mail.expiresAt.toISOString()}.`,
      ].join('\n'),
    });
  }

  close(): void {
    this.transport.close();
  }
}
