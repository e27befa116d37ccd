// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC1155} from "@openzeppelin/contracts/token/ERC1155/ERC1155.sol";
import {ERC1155Burnable} from "@openzeppelin/contracts/token/ERC1155/extensions/ERC1155Burnable.sol";
import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {ipfsURI} from "./IpfsURI.sol";

/**
 * @title MintworksItems
 * @notice ERC-1155 collection of stackable items minted by the Mintworks service.
 *
 * - Same operator model as MintworksCollection: operators (the service's hot wallets) mint and manage
 *   the base URI; the owner is implicitly an operator and manages the operator set.
 * - Item ids are chosen by the service. Each id has a maximum supply, fixed by its first mint and
 *   enforced here: what was ever minted of an id never exceeds it (burns do not make room again, as a
 *   burned ERC-721 id never comes back).
 * - Every mint carries the service's sequence number for it (per collection, counted from 1). A number
 *   mints once: a retried or replayed batch skips the numbers already used instead of minting them
 *   again (exactly-once minting), and `mintUsed` tells the service afterwards whether a mint is on
 *   chain. Used numbers are a bitmap (bit `seq & 0xff` of word `seq >> 8`): consecutive mints share a
 *   slot, so the guard costs about 5k gas per 256 mints instead of a fresh slot (22k) per mint.
 * - End users hold no ETH; they transfer / burn through the trusted ERC-2771 forwarder, so every
 *   authorization check uses `_msgSender()`, never `msg.sender`.
 * - `uri(id)` is the base URI + the decimal id (the service's metadata route), as for the ERC-721, or an
 *   IPFS document set by `setTokenCID` (production Apps): stored as MintworksCollection stores a
 *   token's, the sha2-256 digest of the CID and a bit for a dag-pb codec. Set in a transaction of its
 *   own, not with mints, so that mints cost the same for every App.
 */
contract MintworksItems is ERC1155Burnable, ERC2771Context, Ownable {
    using Strings for uint256;

    /// @dev What was minted of an id and its cap, in one slot (one SLOAD and one SSTORE per mint).
    ///      `cap` 0 means "not fixed yet" (never minted); an unlimited id stores UNLIMITED.
    struct Supply {
        uint128 minted;
        uint128 cap;
    }

    uint128 private constant UNLIMITED = type(uint128).max;

    mapping(uint256 id => Supply) private _supply;

    /// @dev Bitmap of the mint sequence numbers already used.
    mapping(uint256 word => uint256) private _usedMints;

    mapping(address account => bool) private _operators;

    string private _baseTokenURI;

    /// @dev sha2-256 digest of the id's metadata CID; zero means "baseURI + id" (as MintworksCollection's).
    mapping(uint256 id => bytes32) private _cidDigests;

    /// @dev Bitmap of ids whose CID has codec dag-pb rather than raw (bit `id & 0xff` of word `id >> 8`).
    mapping(uint256 word => uint256) private _dagPbBitmap;

    event OperatorSet(address indexed account, bool enabled);

    error NotOperator();
    error LengthMismatch();
    error ZeroAddress();
    /// @dev Minting `amount` more of `id` would take what was ever minted of it past its cap.
    error MaxSupplyExceeded(uint256 id, uint256 cap, uint256 minted, uint256 amount);
    /// @dev dag-pb was requested with a zero digest, which means "no CID": a caller bug.
    error InvalidCid();

    modifier onlyOperator() {
        if (!isOperator(_msgSender())) revert NotOperator();
        _;
    }

    constructor(
        string memory baseURI_,
        address trustedForwarder_,
        address[] memory operators_
    ) ERC1155("") ERC2771Context(trustedForwarder_) Ownable(msg.sender) {
        _baseTokenURI = baseURI_;
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
     * @notice Mints `amounts[i]` of `ids[i]` to `to[i]`, once per `seqs[i]`. `caps[i]` is the id's
     *         maximum supply (0: unlimited), fixed by the id's first mint; later values are ignored.
     * @dev A used number is skipped, not reverted: a batch sent again after a dropped transaction mints
     *      only what did not land. Any other failure (a cap exceeded) reverts the whole batch. No
     *      receiver callback runs (wallets are the service's EOAs; no reentrancy from recipients).
     */
    function mintBatch(
        address[] calldata to,
        uint256[] calldata ids,
        uint256[] calldata amounts,
        uint256[] calldata caps,
        uint256[] calldata seqs
    ) external onlyOperator {
        uint256 n = to.length;
        if (ids.length != n || amounts.length != n || caps.length != n || seqs.length != n) revert LengthMismatch();
        for (uint256 i = 0; i < n; ++i) {
            uint256 seq = seqs[i];
            uint256 word = _usedMints[seq >> 8];
            uint256 bit = uint256(1) << (seq & 0xff);
            if (word & bit != 0) continue;
            _usedMints[seq >> 8] = word | bit;
            _mintOne(to[i], ids[i], amounts[i], caps[i]);
        }
    }

    function _mintOne(address to, uint256 id, uint256 amount, uint256 cap) private {
        if (to == address(0)) revert ZeroAddress();
        Supply memory s = _supply[id];
        if (s.cap == 0) s.cap = cap == 0 || cap >= UNLIMITED ? UNLIMITED : uint128(cap);
        // In 256 bits: an amount of 2^128 or more exceeds any cap instead of wrapping.
        if (uint256(s.minted) + amount > s.cap) revert MaxSupplyExceeded(id, s.cap == UNLIMITED ? 0 : s.cap, s.minted, amount);
        s.minted += uint128(amount);
        _supply[id] = s;
        uint256[] memory idArray = new uint256[](1);
        uint256[] memory amountArray = new uint256[](1);
        idArray[0] = id;
        amountArray[0] = amount;
        // _update, not _mint: no acceptance check (see mintBatch); emits TransferSingle.
        _update(address(0), to, idArray, amountArray);
    }

    /// @notice What was ever minted of `id` (burns do not lower it).
    function mintedSupply(uint256 id) external view returns (uint256) {
        return _supply[id].minted;
    }

    /// @notice The maximum supply of `id`; 0 while unlimited or not fixed yet (never minted).
    function maxSupply(uint256 id) external view returns (uint256) {
        uint128 cap = _supply[id].cap;
        return cap == UNLIMITED ? 0 : cap;
    }

    /// @notice Whether mint number `seq` is on chain.
    function mintUsed(uint256 seq) public view returns (bool) {
        return _usedMints[seq >> 8] & (uint256(1) << (seq & 0xff)) != 0;
    }

    /// @notice For each mint number, whether it is on chain (one call answers a whole batch's outcome).
    function mintsUsed(uint256[] calldata seqs) external view returns (bool[] memory used) {
        used = new bool[](seqs.length);
        for (uint256 i = 0; i < seqs.length; ++i) used[i] = mintUsed(seqs[i]);
    }

    // ------------------------------------------------------------------ metadata

    /// @notice `ipfs://<CIDv1 base32>` of the id's document, or else the base URI + the decimal id ("" without a base URI).
    function uri(uint256 id) public view override returns (string memory) {
        bytes32 cid = _cidDigests[id];
        if (cid != 0) return ipfsURI(cid, _dagPbBitmap[id >> 8] & (uint256(1) << (id & 0xff)) != 0);
        string memory base = _baseTokenURI;
        return bytes(base).length != 0 ? string.concat(base, id.toString()) : "";
    }

    /**
     * @notice Points `id`'s URI at an IPFS document: `cid` is the sha2-256 digest of its CID, `dagPb` says
     *         the codec is dag-pb (else raw); a zero digest falls back to the base URI + id. Emits `URI`
     *         with the new value, so marketplaces fetch the document again. An id need not be minted yet.
     */
    function setTokenCID(uint256 id, bytes32 cid, bool dagPb) external onlyOperator {
        if (dagPb && cid == 0) revert InvalidCid();
        _cidDigests[id] = cid;
        uint256 word = _dagPbBitmap[id >> 8];
        uint256 bit = uint256(1) << (id & 0xff);
        uint256 updated = dagPb ? word | bit : word & ~bit;
        if (updated != word) _dagPbBitmap[id >> 8] = updated;
        emit URI(uri(id), id);
    }

    /// @dev The base URI is hosting configuration (e.g. a domain move), as for the ERC-721.
    function setBaseURI(string calldata baseURI_) external onlyOperator {
        _baseTokenURI = baseURI_;
    }

    /// @notice Emits the ERC-1155 `URI` event for `id` with its current URI: the service serves an edited
    ///         document at the unchanged URI, and marketplaces refresh an id when they see the event.
    function refreshURI(uint256 id) external onlyOperator {
        emit URI(uri(id), id);
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
