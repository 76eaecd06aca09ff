import { z } from 'zod';
import { text } from './text';

/** Emails are compared case-insensitively: the stored and looked-up form is trimmed and lower-cased. */
export const ZEmail = text()
  .trim()
  .max(254, 'Email must be at most 254 characters')
  .pipe(z.email('Enter a valid email address'))
  .transform((email) => email.toLowerCase());

