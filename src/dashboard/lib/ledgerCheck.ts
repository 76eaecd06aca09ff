/**
 * The dashboard's in-browser ledger checks as queries: the session's organization, the key the server
 * presents, and localStorage as what this browser remembers (`ledgerTrust.ts`).
 */
import { useQuery } from '@tanstack/react-query';
import type { TEvent } from '../../domain/event';
import type { TInclusionProof, TInstallationInclusion, TLedgerSummary } from '../../domain/ledger/schemas';
import { SELF_AUDIT_KEY_ID } from '../../domain/selfAudit';
import { importVerifier, verifyWitnessed } from '../../client/webVerify';
import { checkCheckpoint, checkEvent, type FetchConsistency } from './ledgerTrust';
import { checkProducerSignature } from './producerCheck';
import { useMe } from './session';
import { errorCode, trpc } from './trpc';

/** A new event's checkpoint is signed within a second or so: a proof query keeps asking for a little while. */
const waitingForCheckpoint = (count: number, error: unknown) => errorCode(error) === 'CHECKPOINT_NOT_FOUND' && count < 15;

/** An event's inclusion proof, asked again while its checkpoint is being signed. */
export function useEventProof(id: string | undefined) {
  return useQuery({
    queryKey: ['events', 'proof', id],
    queryFn: () => trpc.dashboard.events.proof.query({ id: id as string }),
    enabled: id !== undefined,
    retry: waitingForCheckpoint,
    retryDelay: 1000,
  });
}

const fetchConsistency: FetchConsistency = async (from, to) => (await trpc.dashboard.ledger.consistency.query({ from, to })).proof;

/** The ledger summary: the verifier key and the newest checkpoint (the Ledger page polls it). */
export function useLedgerSummary(refetchInterval?: number) {
  return useQuery({ queryKey: ['ledger'], queryFn: () => trpc.dashboard.ledger.summary.query(), ...(refetchInterval ? { refetchInterval } : {}) });
}

/** A signed checkpoint checked against this browser's memory of the log. */
export function useCheckpointTrust(note: string | undefined, servedKey: string | undefined) {
  const org = useMe().data?.organization.id;
  return useQuery({
    queryKey: ['ledger', 'trust', org, note],
    queryFn: () => checkCheckpoint(localStorage, org as string, servedKey as string, note as string, fetchConsistency),
    enabled: Boolean(org && note && servedKey),
    // The Ledger page polls: keep the last verdict on screen while the next checkpoint is checked.
    placeholderData: (previous) => previous,
    staleTime: Infinity,
    retry: false,
  });
}

/** The newest checkpoint's inclusion in the installation log and its cosignatures, verified here. */
export function useWitnessCheck(summary: TLedgerSummary | undefined) {
  const installation = summary?.checkpoint?.installation;
  return useQuery({
    queryKey: ['ledger', 'witnesses', installation?.checkpoint, summary?.checkpoint?.checkpoint],
    queryFn: async () => verifyWitnessed((summary as TLedgerSummary).checkpoint?.checkpoint as string, installation as TInstallationInclusion, await importVerifier((summary as TLedgerSummary).verifier_key), (summary as TLedgerSummary).witnesses),
    enabled: Boolean(installation && summary),
    placeholderData: (previous) => previous,
    staleTime: Infinity,
    retry: false,
  });
}

/** An event's inclusion, verified here, and its checkpoint checked against this browser's memory. */
export function useEventCheck(event: TEvent | undefined, proof: TInclusionProof | undefined, servedKey: string | undefined) {
  const org = useMe().data?.organization.id;
  return useQuery({
    queryKey: ['ledger', 'event-check', org, event?.id, proof?.checkpoint],
    queryFn: () => checkEvent(localStorage, org as string, servedKey as string, event as TEvent, proof as TInclusionProof, fetchConsistency),
    enabled: Boolean(org && event && proof && servedKey),
    staleTime: Infinity,
    retry: false,
  });
}

/**
 * An event's producer signature, checked here (lib/producerCheck.ts): the binding entry of its key as
 * the server finds it in the log (null: none), that entry's inclusion proof, and the verdict. The
 * service's own entries are signed by no producer: nothing is asked for them.
 */
export function useProducerCheck(event: TEvent, servedKey: string | undefined) {
  const org = useMe().data?.organization.id;
  const binding = useQuery({
    queryKey: ['events', 'producer-binding', event.api_key_id],
    queryFn: () => trpc.dashboard.events.producerBinding.query({ api_key_id: event.api_key_id }),
    enabled: event.api_key_id !== SELF_AUDIT_KEY_ID,
  });
  const entry = binding.data ?? undefined;
  const proof = useEventProof(entry?.id);
  const check = useQuery({
    queryKey: ['ledger', 'producer-check', org, event.id, entry?.id ?? null, proof.data?.checkpoint ?? null],
    queryFn: () => checkProducerSignature(localStorage, org as string, servedKey as string, event, entry && proof.data ? { entry, proof: proof.data } : null, fetchConsistency),
    enabled: Boolean(org && servedKey && binding.isSuccess && (binding.data === null || proof.data)),
    staleTime: Infinity,
    retry: false,
  });
  return { binding, proof, check };
}
