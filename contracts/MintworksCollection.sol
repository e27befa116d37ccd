// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {IERC165} from "@openzeppelin/contracts/utils/introspection/IERC165.sol";
import {IERC4906} from "@openzeppelin/contracts/interfaces/IERC4906.sol";
import {IERC721} from "@openzeppelin/contracts/token/ERC721/IERC721.sol";
import {ERC2981} from "@openzeppelin/contracts/token/common/ERC2981.sol";
import {ipfsURI} from "./IpfsURI.sol";

/// @dev ERC-5192 (minimal soulbound NFTs). Not shipped by OpenZeppelin 5, so declared here as the EIP writes it.
interface IERC5192 {
    event Locked(uint256 tokenId);
    event Unlocked(uint256 tokenId);

    function locked(uint256 tokenId) external view returns (bool);
}

/// @dev ERC-7572 (contract-level metadata): what marketplaces show for the collection as a whole.
interface IERC7572 {
    event ContractURIUpdated();

    function contractURI() external view returns (string memory);
}

/**
 * @title MintworksCollection
 * @notice ERC-721 collection minted by the Mintworks service.
 *
 * - Operators (the service's hot wallets) mint, set metadata and manage the base URI.
 *   The owner is implicitly an operator and manages the operator set.
 * - Token ids are chosen by the service. Minting an id that exists, or that existed
 *   and was burned, reverts: a retried/replayed mint can never produce a second token
 *   or resurrect a burned one (exactly-once minting).
 * - End users hold no ETH; they transfer / burn through the trusted ERC-2771 forwarder,
 *   so every authorization check uses `_msgSender()`, never `msg.sender`.
 * - A token's metadata is either the collection's `baseURI + id` or an IPFS document. For the
 *   latter only the sha2-256 digest of its CID is stored (one storage slot instead of the four a
 *   66-byte `ipfs://bafkrei…` string takes, ~66k gas less per mint); `tokenURI` rebuilds the
 *   exact `ipfs://<CIDv1 base32>` string from it. The service's documents are UnixFS files as
 *   `ipfs add --cid-version 1` makes them: a single-chunk file is a raw block (codec 0x55,
 *   `bafkrei…`), a larger one a dag-pb root (codec 0x70, `bafybei…`). Raw is the common case and
 *   costs nothing extra; dag-pb tokens are marked in a bitmap.
 * - Collection options: ERC-2981 royalties and the ERC-7572 contract URI (both changeable by an
 *   operator, in one call, since the contract document carries the royalty too), and ERC-5192
 *   soulbound tokens (fixed at deployment): every token is locked, transfers revert, burns do not.
 *   The soulbound check sits in `transferFrom` (which both `safeTransferFrom`s call), not in
 *   `_update`, so that minting and burning pay nothing for it.
 */
contract MintworksCollection is ERC721, ERC2981, ERC2771Context, Ownable, IERC4906, IERC5192, IERC7572 {
    using Strings for uint256;

    /// @dev ERC-165 id of ERC-4906 (metadata update events), fixed by the EIP.
    bytes4 private constant ERC4906_INTERFACE_ID = bytes4(0x49064906);
    /// @dev ERC-165 id of ERC-5192 (`locked(uint256)`), fixed by the EIP.
    bytes4 private constant ERC5192_INTERFACE_ID = bytes4(0xb45a3c0e);

    /// @dev Whether tokens are bound to the account they are minted to (ERC-5192): set at deployment.
    ///      Read through `supportsInterface(0xb45a3c0e)` or `locked(id)`: no getter of its own, as each
    ///      function more lengthens the selector dispatch every mint goes through.
    bool private immutable _soulbound;

    string private _contractURI;

    /// @notice Whether per-token metadata may be changed after minting.
    bool public immutable editable;

    string private _baseTokenURI;

    /// @dev sha2-256 digest of the token's metadata CID; zero means "baseURI + id" (no per-token
    ///      document, as for development Apps). A real digest is never zero (a 2^-256 chance).
    mapping(uint256 id => bytes32) private _cidDigests;

    /// @dev Bitmap of tokens whose CID has codec dag-pb rather than raw (same layout as
    ///      `_burnedBitmap`). Only dag-pb tokens write it, so raw tokens pay nothing for it.
    mapping(uint256 word => uint256) private _dagPbBitmap;

    /// @dev Bitmap of burned ids (bit `id & 0xff` of word `id >> 8`). A bitmap instead of a
    ///      bool mapping keeps the mint-time check to one SLOAD per 256 consecutive ids.
    mapping(uint256 word => uint256) private _burnedBitmap;

    mapping(address account => bool) private _operators;

    event OperatorSet(address indexed account, bool enabled);

    error NotOperator();
    error NotEditable();
    error LengthMismatch();
    /// @dev The id was minted and burned before; it can never be minted again.
    error TokenBurned(uint256 id);
    /// @dev dag-pb was requested with a zero digest, which means "no CID": a caller bug.
    error InvalidCid();
    /// @dev The collection is soulbound: its tokens can be burned, never transferred.
    error Soulbound(uint256 id);

    modifier onlyOperator() {
        if (!isOperator(_msgSender())) revert NotOperator();
        _;
    }

    constructor(
        string memory name_,
        string memory symbol_,
        string memory baseURI_,
        bool editable_,
        address trustedForwarder_,
        address[] memory operators_,
        bool soulbound_,
        address royaltyReceiver_,
        uint96 royaltyBps_,
        string memory contractURI_
    ) ERC721(name_, symbol_) ERC2771Context(trustedForwarder_) Ownable(msg.sender) {
        _baseTokenURI = baseURI_;
        editable = editable_;
        _soulbound = soulbound_;
        _contractURI = contractURI_;
        if (royaltyReceiver_ != address(0)) _setDefaultRoyalty(royaltyReceiver_, royaltyBps_);
        for (uint256 i = 0; i < operators_.length; ++i) {
            _operators[operators_[i]] = true;
            emit OperatorSet(operators_[i], true);
        }
    }

    // ------------------------------------------------------------------ operators

    /// @notice True for explicit operators and for the owner (who could grant itself anyway).
    function isOperator(address account) public view returns (bool) {
        return _operators[account] || account == owner();
    }

    function setOperator(address account, bool enabled) external onlyOwner {
        _operators[account] = enabled;
        emit OperatorSet(account, enabled);
    }

    // ------------------------------------------------------------------ minting

    /**
     * @notice Mints `ids[i]` to `to[i]`. `cids[i]` is the sha2-256 digest of the token's metadata
     *         CID, or zero for "baseURI + id"; `dagPb[i]` says the CID's codec is dag-pb (else raw).
     * @dev All-or-nothing: any existing/burned id reverts the whole batch. Uses `_mint`,
     *      not `_safeMint`, so no receiver callback runs (no reentrancy from recipients).
     */
    function mintBatch(
        address[] calldata to,
        uint256[] calldata ids,
        bytes32[] calldata cids,
        bool[] calldata dagPb
    ) external onlyOperator {
        uint256 n = to.length;
        if (ids.length != n || cids.length != n || dagPb.length != n) revert LengthMismatch();
        for (uint256 i = 0; i < n; ++i) {
            // `to[i]` & co. would check `i` against each array's length (4 checks per token, done once
            // above for all of them) and move the values through more stack: reading the i-th words
            // directly costs ~390 gas less per token. The ABI decoder has already checked that the
            // arrays lie within the calldata; what it checks per element when read, an address with
            // no high bits and a bool that is 0 or 1, is checked here the same way (empty revert).
            address recipient;
            uint256 id;
            bytes32 cid;
            bool isDagPb;
            assembly ("memory-safe") {
                let at := shl(5, i)
                recipient := calldataload(add(to.offset, at))
                id := calldataload(add(ids.offset, at))
                cid := calldataload(add(cids.offset, at))
                isDagPb := calldataload(add(dagPb.offset, at))
                if or(shr(160, recipient), gt(isDagPb, 1)) { revert(0, 0) }
            }
            _mintOne(recipient, id, cid, isDagPb);
        }
        // Outside the loop: a collection that is not soulbound pays for this test once per batch, not per token.
        if (_soulbound) {
            for (uint256 i = 0; i < n; ++i) emit Locked(ids[i]);
        }
    }

    function mint(address to, uint256 id, bytes32 cid, bool dagPb) external onlyOperator {
        _mintOne(to, id, cid, dagPb);
        if (_soulbound) emit Locked(id);
    }

    function _mintOne(address to, uint256 id, bytes32 cid, bool dagPb) private {
        if (_isBurned(id)) revert TokenBurned(id);
        // Reverts with ERC721InvalidSender(address(0)) if `id` already exists.
        _mint(to, id);
        // Only write storage when there is something to store: a development token costs no slot.
        if (cid != 0) _cidDigests[id] = cid;
        if (dagPb) {
            if (cid == 0) revert InvalidCid();
            _dagPbBitmap[id >> 8] |= uint256(1) << (id & 0xff);
        }
    }

    // ------------------------------------------------------------------ soulbound (ERC-5192)

    /// @notice True for every token of a soulbound collection; reverts for a token that does not exist.
    function locked(uint256 id) external view returns (bool) {
        _requireOwned(id);
        return _soulbound;
    }

    /// @dev Both `safeTransferFrom`s end here; burns go through `_update` and stay allowed.
    function transferFrom(address from, address to, uint256 id) public override(ERC721, IERC721) {
        if (_soulbound) revert Soulbound(id);
        super.transferFrom(from, to, id);
    }

    // ------------------------------------------------------------------ collection metadata

    /// @notice The collection's own metadata document (ERC-7572).
    function contractURI() external view returns (string memory) {
        return _contractURI;
    }

    /**
     * @notice Sets the royalty (ERC-2981; a zero receiver removes it) and the contract URI together:
     *         the document behind the URI states the royalty as well, so they change as one.
     *         Sending the same values again changes nothing but emits the event again.
     */
    function setCollectionInfo(address royaltyReceiver, uint96 royaltyBps, string calldata contractURI_) external onlyOperator {
        if (royaltyReceiver == address(0)) _deleteDefaultRoyalty();
        else _setDefaultRoyalty(royaltyReceiver, royaltyBps);
        _contractURI = contractURI_;
        emit ContractURIUpdated();
    }

    // ------------------------------------------------------------------ burning

    /// @notice Burns `id`; caller (as seen through the forwarder) must own it or be approved.
    function burn(uint256 id) external {
        // Same auth pattern as ERC721Burnable: _update checks owner/approval of _msgSender()
        // and reverts with ERC721NonexistentToken for unknown ids.
        _update(address(0), id, _msgSender());
        _burnedBitmap[id >> 8] |= uint256(1) << (id & 0xff);
        // The id can never come back, so its CID is dead state: clearing it earns the refund.
        if (_cidDigests[id] != 0) {
            delete _cidDigests[id];
            _setDagPb(id, false);
        }
    }

    function _isBurned(uint256 id) private view returns (bool) {
        return _burnedBitmap[id >> 8] & (uint256(1) << (id & 0xff)) != 0;
    }

    // ------------------------------------------------------------------ metadata

    /// @notice `ipfs://<CIDv1 base32>` of the token's document, or else baseURI + id ("" without a base URI).
    function tokenURI(uint256 id) public view override returns (string memory) {
        _requireOwned(id);
        bytes32 cid = _cidDigests[id];
        if (cid != 0) return ipfsURI(cid, _isDagPb(id));
        string memory base = _baseTokenURI;
        return bytes(base).length != 0 ? string.concat(base, id.toString()) : "";
    }

    /**
     * @notice Replaces the token's metadata CID (digest and codec, as for minting). A zero digest
     *         falls back to baseURI + id.
     */
    function setTokenCID(uint256 id, bytes32 cid, bool dagPb) external onlyOperator {
        if (!editable) revert NotEditable();
        if (dagPb && cid == 0) revert InvalidCid();
        _requireOwned(id);
        _cidDigests[id] = cid;
        _setDagPb(id, dagPb);
        emit MetadataUpdate(id);
    }

    /// @notice Signals indexers/marketplaces that the document behind the token's URI changed.
    function refreshMetadata(uint256 id) external onlyOperator {
        if (!editable) revert NotEditable();
        _requireOwned(id);
        emit MetadataUpdate(id);
    }

    /// @dev Not gated by `editable`: the base URI is hosting configuration (e.g. a domain move);
    ///      `editable` governs per-token metadata.
    function setBaseURI(string calldata baseURI_) external onlyOperator {
        _baseTokenURI = baseURI_;
        emit BatchMetadataUpdate(0, type(uint256).max);
    }

    function _isDagPb(uint256 id) private view returns (bool) {
        return _dagPbBitmap[id >> 8] & (uint256(1) << (id & 0xff)) != 0;
    }

    /// @dev Writes the bit only when it changes: an edit between two raw CIDs touches no bitmap word.
    function _setDagPb(uint256 id, bool dagPb) private {
        uint256 word = _dagPbBitmap[id >> 8];
        uint256 bit = uint256(1) << (id & 0xff);
        uint256 updated = dagPb ? word | bit : word & ~bit;
        if (updated != word) _dagPbBitmap[id >> 8] = updated;
    }

    function _baseURI() internal view override returns (string memory) {
        return _baseTokenURI;
    }

    function supportsInterface(bytes4 interfaceId) public view override(ERC721, ERC2981, IERC165) returns (bool) {
        return interfaceId == ERC4906_INTERFACE_ID || (_soulbound && interfaceId == ERC5192_INTERFACE_ID) || super.supportsInterface(interfaceId);
    }

    // ------------------------------------------------------------------ ERC-2771 plumbing

    function _msgSender() internal view override(Context, ERC2771Context) returns (address) {
        return ERC2771Context._msgSender();
    }

    function _msgData() internal view override(Context, ERC2771Context) returns (bytes calldata) {
        return ERC2771Context._msgData();
    }

    function _contextSuffixLength() internal view override(Context, ERC2771Context) returns (uint256) {
        return ERC2771Context._contextSuffixLength();
    }
}
