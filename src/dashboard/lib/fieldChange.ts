/** Whether an event's metadata describes a field change (interface.md §2.2), and which. */
export interface FieldChange {
  field: string;
  oldValue: unknown;
  newValue: unknown;
}

/** The change an event's metadata describes, if it describes one. */
export function fieldChangeOf(metadata: Record<string, unknown>): FieldChange | null {
  if (!('field' in metadata) || !('old_value' in metadata) || !('new_value' in metadata)) return null;
  const field = metadata.field;
  return { field: typeof field === 'string' ? field : JSON.stringify(field), oldValue: metadata.old_value, newValue: metadata.new_value };
}
