/**
 * The verification client: everything a party outside the service needs to check what the service
 * gives it, pure (no server, no database), importing nothing of ours but src/domain/. The CLI's
 * `verify`, `stream verify` and `monitor` are shells over it; the dashboard and the viewer import its
 * browser modules (`webVerify.ts`, `retentionCheck.ts`) directly, whose imports stay free of `node:*`.
 */
export { checkExport, checkRemembered, eventProblems, type ExportFound, type FetchProof, isWholeLog, matchesFilters, type TProofsSidecar } from './exportCheck';
export { firstMonitorState, monitorLog, type MonitorSource, type MonitorState, type MonitorSummary, type SeenEntry } from './monitorCheck';
export { checkRetention, formatRanges, type LogEntry, logEntryOf, parseRanges, type RetentionCheck } from './retentionCheck';
export { checkDelivery, type DeliveredFile, describeSeqs, runsOf, type StreamVerifySummary } from './streamCheck';
export { type RecordVerdict, type Verdict, verdictList, type Verdicts } from './verdicts';
export { importVerifier, type InclusionCheck, openCheckpoint, verifyConsistency, verifyEventInclusion, verifyWitnessed, type WebVerifier, type WitnessCheck } from './webVerify';
export { checkQuorum, checkWitnessed } from './witnessPolicy';
