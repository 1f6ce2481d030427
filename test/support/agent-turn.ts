/** A turn of a coding agent (OpenAI Chat): two parallel tool calls with JSON outputs, as the role and tenant tests append them. */
export function agentTurn(i: number) {
  return [
    { role: 'user', content: `Turn ${i}: find why the nightly export of invoices fails for tenant acme-${i} and fix it.` },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: `call_${i}_a`, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/export/invoices-${i}.ts` }) } },
        {
          id: `call_${i}_b`,
          type: 'function',
          function: { name: 'run_query', arguments: JSON.stringify({ sql: 'select status, count(*) from exports group by 1' }) },
        },
      ],
    },
    {
      role: 'tool',
      tool_call_id: `call_${i}_a`,
      content: JSON.stringify({ path: `src/export/invoices-${i}.ts`, lines: 212, excerpt: 'const batch = rows.slice(0, limit);'.repeat(3) }),
    },
    {
      role: 'tool',
      tool_call_id: `call_${i}_b`,
      content: JSON.stringify({
        rows: [
          { status: 'failed', count: 3 + i },
          { status: 'done', count: 481 },
        ],
      }),
    },
    { role: 'assistant', content: `The batch limit drops the last page for acme-${i}; fixed in src/export/invoices-${i}.ts and a test added.` },
  ];
}
