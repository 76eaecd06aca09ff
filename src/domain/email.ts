import { z } from 'zod';
import { text } from './text';

/** Emails are compared case-insensitively: the stored and looked-up form is trimmed and lower-cased. */
export const ZEmail = text()
  .trim()
  .max(254)
  .pipe(z.email())
  .transform((email) => email.toLowerCase());

