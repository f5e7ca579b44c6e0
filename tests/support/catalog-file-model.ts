/**
 * One model entry of a catalog file (the format of server/catalog-file.ts): a chat model on the
 * simulator with test defaults, which `fields` override.
 */
export function catalogFileModel(fields: { id: string } & Record<string, unknown>): Record<string, unknown> {
  return {
    owned_by: 'test',
    modality: 'chat',
    context_window: 8192,
    max_output_tokens: 1024,
    region: 'EG',
    weights: 'Open weights',
    published: '2024-01-01',
    input_price_egp: '1',
    output_price_egp: '2',
    deployments: [{ provider: 'simulator' }],
    ...fields,
  }
}
