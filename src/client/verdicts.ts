/** The verdicts a check records, one line each, in the order it made them: what every command prints. */

export interface Verdict {
  ok: boolean;
  check: string;
}

/** Records one verdict; returns `ok`, so a check can stop on its failure. */
export type RecordVerdict = (ok: boolean, check: string) => boolean;

/** A run's verdicts, the function that records them, and its failures so far. */
export interface Verdicts {
  verdicts: Verdict[];
  record: RecordVerdict;
  failures: () => string[];
}

/** An empty list of verdicts for one run. */
export function verdictList(): Verdicts {
  const verdicts: Verdict[] = [];
  return {
    verdicts,
    record: (ok, check) => {
      verdicts.push({ ok, check });
      return ok;
    },
    failures: () => verdicts.filter((v) => !v.ok).map((v) => v.check),
  };
}
