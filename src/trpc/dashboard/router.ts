/** Everything the dashboard calls besides sign-in: session-authenticated, on /trpc only, not in openapi.json. */
import { router } from '../init';
import { acceptInvitation, invitation, login, logout, me, signup, switchOrganization } from './account';
import { changeRole, inviteMember, leaveOrganization, listMembers, removeMember, revokeInvitation } from './members';
import { getSessionEvent, listSessionEvents, sessionProducerBinding } from './events';
import { bindProducerKey, createKey, listKeys, revokeKey } from './keys';
import { ledgerSummary, sessionConsistency, sessionEventProof } from './ledger';
import { usageSummary } from './usage';
import { eraseEvents, placeHold, releaseHold, retentionView, setRetentionPolicy } from './retention';
import { sessionStreams } from '../streams/procedures';

export const accountRouter = router({ signup, login, logout, me, switchOrganization, invitation, acceptInvitation });

export const dashboardRouter = router({
  keys: router({ list: listKeys, create: createKey, revoke: revokeKey, bindProducer: bindProducerKey }),
  events: router({ list: listSessionEvents, get: getSessionEvent, proof: sessionEventProof, producerBinding: sessionProducerBinding }),
  usage: usageSummary,
  streams: router(sessionStreams),
  ledger: router({ summary: ledgerSummary, consistency: sessionConsistency }),
  retention: router({ view: retentionView, setPolicy: setRetentionPolicy, placeHold, releaseHold, erase: eraseEvents }),
  members: router({ list: listMembers, invite: inviteMember, revokeInvitation, changeRole, remove: removeMember, leave: leaveOrganization }),
});
