// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

// The `ipfs://<CIDv1 base32>` URI of a metadata document from the sha2-256 digest of its CID, shared by
// MintworksCollection (`tokenURI`) and MintworksItems (`uri`). Both store only the digest (one slot
// instead of the four a 66-byte string takes) and a bit for the codec. A file-level function: inlined
// into each contract, no library to deploy or link.

/// @dev RFC 4648 base32 alphabet, lower case: exactly 32 bytes, so one word and `byte(i, …)` is the lookup.
bytes32 constant BASE32_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";

/**
 * @dev `ipfs://` + multibase "b" + base32 (lower, unpadded) of the 36-byte binary CIDv1
 *      `0x01 codec 0x12 0x20 digest`, codec raw (0x55) or dag-pb (0x70) as `ipfs add --cid-version 1`
 *      makes a single-chunk or a larger file. Its first 4 bytes (32 bits) are fixed per codec, so the
 *      first 6 characters (30 bits) are too: "afkrei" (raw) / "afybei" (dag-pb). The remaining 2 bits
 *      of 0x20 are zero, so what follows is the 258-bit string "00" ++ digest, padded with two zero
 *      bits to 52 characters: character k (0..50) is the 5 bits of the digest ending at bit
 *      5k + 2 from the top, and the last one is the digest's low 3 bits followed by "00".
 *      66 bytes in all: "ipfs://b" (8) + 6 + 52.
 */
function ipfsURI(bytes32 digest, bool dagPb) pure returns (string memory uri) {
    bytes32 prefix = dagPb ? bytes32("ipfs://bafybei") : bytes32("ipfs://bafkrei");
    bytes32 alphabet = BASE32_ALPHABET;
    assembly ("memory-safe") {
        uri := mload(0x40)
        mstore(0x40, add(uri, 128)) // length word + 66 bytes, rounded up to 3 words
        mstore(uri, 66)
        let data := add(uri, 32)
        mstore(data, prefix) // 14 prefix bytes; the rest of this word is overwritten below
        mstore(add(data, 32), 0)
        mstore(add(data, 64), 0) // bytes past the length stay zero, as ABI encoding expects
        let out := add(data, 14)
        for { let k := 0 } lt(k, 51) { k := add(k, 1) } {
            // 5 bits whose lowest is digest bit 5k + 2 from the top, i.e. 253 - 5k from the bottom.
            mstore8(add(out, k), byte(and(shr(sub(253, mul(5, k)), digest), 31), alphabet))
        }
        mstore8(add(out, 51), byte(shl(2, and(digest, 7)), alphabet))
    }
}
