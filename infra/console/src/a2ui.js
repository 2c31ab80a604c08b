// The console's A2UI renderer: the official v0.9 web renderer (@a2ui/lit) with Harmonia's
// catalog, the basic catalog plus EntityView. A layout names entities only by reference; the
// page hydrates each one from the job view's `entities` through the function it passes in.
import { nothing } from 'lit';
import { z } from 'zod';
import { Catalog, MessageProcessor } from '@a2ui/web_core/v0_9';
import { A2uiLitElement, A2uiSurface, basicCatalog } from '@a2ui/lit/v0_9';

/** The catalogId every Harmonia surface names (harmonia_agents::a2ui::CATALOG_ID). */
export const CATALOG_ID = 'harmonia:catalog/v0.9';

const EntityViewApi = {
  name: 'EntityView',
  schema: z.object({
    entity: z.object({ kind: z.string(), id: z.string() }),
    weight: z.number().optional(),
    accessibility: z.any().optional(),
  }),
};

let hydrate = () => nothing;
let entitySheets = [];

class EntityView extends A2uiLitElement {
  get api() {
    return EntityViewApi;
  }

  // A shadow root of its own with the page's entity styles: the renderer's components nest
  // shadow roots that document styles do not reach.
  createRenderRoot() {
    const root = this.attachShadow({ mode: 'open' });
    root.adoptedStyleSheets = entitySheets;
    return root;
  }

  render() {
    const props = this.controller?.props;
    return props ? hydrate(props.entity) : nothing;
  }
}
customElements.define('harmonia-entity-view', EntityView);
// Importing A2uiSurface registers <a2ui-surface>.
void A2uiSurface;

const catalog = new Catalog(
  CATALOG_ID,
  [...basicCatalog.components.values(), { ...EntityViewApi, tagName: 'harmonia-entity-view' }],
  [...basicCatalog.functions.values()],
  basicCatalog.themeSchema,
);

/**
 * Render the A2UI `messages` into `container`. `entity(ref)` returns the DOM node that shows the
 * entity `ref` ({kind, id}), styled by the constructed stylesheets `sheets`; `onAction(action)`
 * receives a button's action. Resolves to the surface once rendered; throws when the messages
 * are not a surface of Harmonia's catalog.
 */
export async function render(container, messages, entity, onAction, sheets = []) {
  hydrate = entity;
  entitySheets = sheets;
  const processor = new MessageProcessor([catalog], onAction);
  let created;
  const subscription = processor.onSurfaceCreated((surface) => {
    created = surface;
  });
  processor.processMessages(messages);
  subscription?.unsubscribe?.();
  if (!created) throw new Error('the layout created no surface');
  const surface = document.createElement('a2ui-surface');
  surface.surface = created;
  container.replaceChildren(surface);
  await surface.updateComplete;
  return surface;
}
