/** Request event names and their titles (titles in Portuguese, like the names). */
export const REQUEST_EVENT_TITLES = {
  'pedido-registrado': 'Pedido registrado',
  'pedido-recusado': 'Pedido recusado',
  'pedido-processado': 'Pedido processado',
  'pedido-entregue': 'Pedido entregue',
  'em-rota-de-entrega': 'Pedido em rota de entrega',
} as const;

export type RequestEventName = keyof typeof REQUEST_EVENT_TITLES;

/** Events a partner (or operator) may post: fulfillment of physical prizes. */
export const PARTNER_EVENT_NAMES = ['em-rota-de-entrega', 'pedido-entregue'] as const;

/** A request event exactly as the seed's table (GET /request/{id}/events). */
export interface RequestEventView {
  name: string;
  title: string;
  date: string;
  refId: string;
  experience: string;
  data?: Record<string, unknown>;
}
