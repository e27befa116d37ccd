// Preparing an asset's metadata before it is minted (docs/architecture.md, Metadata):
//  - store_image_on_ipfs false, development App: nothing to prepare; the token URI stays the collection's
//    baseURI + id, served from the database by GET /metadata/<collection>/<id>.
//  - store_image_on_ipfs true: the worker fetches image_url (SSRF-guarded) and keeps a copy, so the
//    document's `image` points at it and `org_image_url` keeps the source.
//  - development App: the copy and the document go to the service's file store (PUBLIC_URL/files/<sha256>);
//    production App: both become UnixFS in the blockstore, `image` = ipfs://<image cid>, token URI =
//    ipfs://<document cid>, the exact CIDs any IPFS node computes for these bytes.
// The fetch runs in a job (`asset.prepare`, services/assets/prepare-job.ts) ahead of the mint job, never in
// the request: a slow image server cannot hold an API request, and transient failures are retried with
// the queue's backoff.
import type { InfraCtx } from '../config/infra-context.js';
import { OutboundBlockedError, assertAllowedUrl } from '../net/outbound.js';
import { ApiError } from '../util/errors.js';
import { buildMetadata, type AssetData, type Attribute } from '../domain/assets.js';
import { fetchImage } from './fetch-image.js';
import { metadataStorage } from './store.js';
import { enqueuePublish, type PublishItem } from './publish.js';
import { PUBLISH_JOB } from '../jobs/kinds.js';
import type { AppEnvironment } from '../domain/environment.js';
/** Attempts for transient failures (timeouts, 5xx): backoff 0.5 s … 64 s, about two minutes in all. */
export const PREPARE_ATTEMPTS = 8;

/** Whether an asset needs the prepare step before minting (pure). */
export function needsPreparation(env: AppEnvironment, storeImage: boolean): boolean {
  return env === 'production' || storeImage;
}

/**
 * Request-time check of image_url when the service will fetch it: refuses what is known to fail now (a
 * scheme other than http/https, a host that is or resolves to a forbidden address) with a 400 naming
 * the field. DNS trouble is not refused here: the worker retries it and fails the asset visibly if it
 * persists. The worker's fetch re-checks everything at connect time; this is early feedback.
 */
export async function assertImageUrlFetchable(ctx: InfraCtx, url: string): Promise<void> {
  try {
    await assertAllowedUrl(url, { allowPrivate: ctx.config.outboundAllowPrivate });
  } catch (err) {
    if (err instanceof OutboundBlockedError) {
      throw ApiError.validation([
        { field: 'data.image_url', code: 'image_url_not_allowed', message: `The image cannot be fetched from this URL: ${err.reason}.` },
      ]);
    }
  }
}

export interface PrepareInput {
  appEnvironment: AppEnvironment;
  assetUid: string;
  /** The displayed name (with `#<token id>` when unique_name was false). */
  name: string;
  data: AssetData;
  /** store_image_on_ipfs as given at creation. */
  storeImage: boolean;
}

export interface PreparedMetadata {
  /** The document; for stored documents, JSON.stringify of it is exactly the stored bytes. */
  metadata: Record<string, unknown>;
  /** The per-token URI to mint with (or setTokenCID on edit): a production App's ipfs:// CID; null = the collection's baseURI + id. */
  tokenUri: string | null;
}

/**
 * Builds (and stores) an asset's metadata document. Used by the prepare job before minting and by the
 * edit path (PUT /asset) for new documents. Throws MetadataError: `permanent` says whether retrying can help.
 * Idempotent: the same input stores the same bytes under the same names.
 */
export async function prepareAssetMetadata(ctx: InfraCtx, input: PrepareInput): Promise<PreparedMetadata> {
  const storage = metadataStorage(ctx.config);
  const production = input.appEnvironment === 'production';
  const publish: PublishItem[] = [];
  let image = input.data.image_url;
  if (input.storeImage) {
    const fetched = await fetchImage(input.data.image_url, { policy: { allowPrivate: ctx.config.outboundAllowPrivate }, maxBytes: ctx.config.imageMaxBytes });
    if (production) {
      const cid = (await storage.addToIpfs(fetched.bytes)).toString();
      image = `ipfs://${cid}`;
      publish.push({ cid, name: `${input.assetUid}-image` });
    } else {
      image = `${ctx.installation.publicUrl}/files/${await storage.files.put(fetched.bytes)}`;
    }
  }
  const metadata = buildMetadata(input.assetUid, input.name, input.data, image);
  const document = Buffer.from(JSON.stringify(metadata), 'utf8');
  let tokenUri: string | null = null;
  if (production) {
    const cid = (await storage.addToIpfs(document)).toString();
    tokenUri = `ipfs://${cid}`;
    publish.push({ cid, name: `${input.assetUid}-metadata.json` });
  }
  // A development App's document is served by the collection's metadata route (baseURI + id), which
  // is also what the chain returns: the contract stores per-token CIDs only.
  // Outside any transaction of the caller: if this process dies before the caller commits, its retry
  // queues the same (idempotent) publish again; nothing is lost, at worst something is pinned twice.
  if (await enqueuePublish(ctx, ctx.db, publish)) ctx.queue.notify(PUBLISH_JOB);
  return { metadata, tokenUri };
}

/** The AssetData behind a stored document (what the prepare job starts from). */
export function assetDataFromDocument(doc: Record<string, unknown>): AssetData {
  return {
    name: String(doc.name),
    unique_name: true, // not used to build a document: the stored name is already the displayed one
    image_url: String(doc.org_image_url ?? doc.image),
    description: typeof doc.description === 'string' ? doc.description : null,
    external_url: typeof doc.external_url === 'string' ? doc.external_url : null,
    attributes: Array.isArray(doc.attributes) ? (doc.attributes as Attribute[]) : null,
  };
}
