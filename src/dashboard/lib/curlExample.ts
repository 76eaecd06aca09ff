/** The getting-started page's first request: a field change, so the new account sees a diff at once. */
export function curlExample(baseUrl: string): string {
  const body = {
    actor: { id: 'user_123', name: 'Jane Doe', email: 'jane@example.com' },
    action: 'user.role_changed',
    resource: { type: 'user', id: 'user_456', name: 'John Smith' },
    metadata: { field: 'role', old_value: 'viewer', new_value: 'admin' },
  };
  return [
    `curl -X POST ${baseUrl}/v1/events \\`,
    `  -H "Authorization: Bearer $AUDIT_LEDGER_API_KEY" \\`,
    `  -H "Content-Type: application/json" \\`,
    `  -d '${JSON.stringify(body, null, 2).replaceAll('\n', '\n  ')}'`,
  ].join('\n');
}
