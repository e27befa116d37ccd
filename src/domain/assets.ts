// Pure rules for asset names and metadata documents (docs/api.md, Objects).

/** An asset's image_url or external_url: an http(s) or ipfs URL, with no space around it. */
export function isAssetUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'ipfs:') && s.trim() === s;
  } catch {
    return false;
  }
}

export interface Attribute {
  trait_type: string;
  value: string | number;
  display_type?: string | null;
}

export interface AssetData {
  name: string;
  unique_name: boolean;
  image_url: string;
  description?: string | null;
  external_url?: string | null;
  attributes?: Attribute[] | null;
}

/** With unique_name false the service appends `#<token id>` to the name. */
export function displayName(name: string, uniqueName: boolean, tokenId: number): string {
  return uniqueName ? name : `${name} #${tokenId}`;
}

/**
 * The metadata document (ERC-721 metadata JSON plus the hosted service's fields), in the key order the
 * service returns. Optional fields that were not sent are absent, not null.
 */
export function buildMetadata(assetUid: string, name: string, data: AssetData, image: string = data.image_url): Record<string, unknown> {
  const doc: Record<string, unknown> = { name, image, org_image_url: data.image_url, original_id: assetUid };
  if (data.description != null) doc.description = data.description;
  if (data.external_url != null) doc.external_url = data.external_url;
  if (data.attributes != null) {
    doc.attributes = data.attributes.map((a) =>
      a.display_type != null ? { trait_type: a.trait_type, value: a.value, display_type: a.display_type } : { trait_type: a.trait_type, value: a.value },
    );
  }
  return doc;
}
