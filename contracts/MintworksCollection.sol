// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";
import {Strings} from "@openzeppelin/contracts/utils/Strings.sol";
import {IERC165} from "@openzeppelin/contracts/utils/introspection/IERC165.sol";
import {IERC4906} from "@openzeppelin/contracts/interfaces/IERC4906.sol";

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
 */
contract MintworksCollection is ERC721, ERC2771Context, Ownable, IERC4906 {
    using Strings for uint256;

    /// @dev ERC-165 id of ERC-4906 (metadata update events), fixed by the EIP.
    bytes4 private constant ERC4906_INTERFACE_ID = bytes4(0x49064906);

    /// @notice Whether per-token metadata may be changed after minting.
    bool public immutable editable;

    string private _baseTokenURI;

    /// @dev Per-token URI; empty means "baseURI + id".
    mapping(uint256 id => string) private _tokenURIs;

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
        address[] memory operators_
    ) ERC721(name_, symbol_) ERC2771Context(trustedForwarder_) Ownable(msg.sender) {
        _baseTokenURI = baseURI_;
        editable = editable_;
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
     * @notice Mints `ids[i]` to `to[i]`, storing `uris[i]` as the token URI when non-empty.
     * @dev All-or-nothing: any existing/burned id reverts the whole batch. Uses `_mint`,
     *      not `_safeMint`, so no receiver callback runs (no reentrancy from recipients).
     */
    function mintBatch(address[] calldata to, uint256[] calldata ids, string[] calldata uris) external onlyOperator {
        uint256 n = to.length;
        if (ids.length != n || uris.length != n) revert LengthMismatch();
        for (uint256 i = 0; i < n; ++i) {
            _mintOne(to[i], ids[i], uris[i]);
        }
    }

    function mint(address to, uint256 id, string calldata uri) external onlyOperator {
        _mintOne(to, id, uri);
    }

    function _mintOne(address to, uint256 id, string calldata uri) private {
        if (_isBurned(id)) revert TokenBurned(id);
        // Reverts with ERC721InvalidSender(address(0)) if `id` already exists.
        _mint(to, id);
        // Only write storage when there is something to store (saves ~22k gas per token).
        if (bytes(uri).length != 0) _tokenURIs[id] = uri;
    }

    // ------------------------------------------------------------------ burning

    /// @notice Burns `id`; caller (as seen through the forwarder) must own it or be approved.
    function burn(uint256 id) external {
        // Same auth pattern as ERC721Burnable: _update checks owner/approval of _msgSender()
        // and reverts with ERC721NonexistentToken for unknown ids.
        _update(address(0), id, _msgSender());
        _burnedBitmap[id >> 8] |= uint256(1) << (id & 0xff);
        if (bytes(_tokenURIs[id]).length != 0) delete _tokenURIs[id];
    }

    function _isBurned(uint256 id) private view returns (bool) {
        return _burnedBitmap[id >> 8] & (uint256(1) << (id & 0xff)) != 0;
    }

    // ------------------------------------------------------------------ metadata

    function tokenURI(uint256 id) public view override returns (string memory) {
        _requireOwned(id);
        string memory uri = _tokenURIs[id];
        if (bytes(uri).length != 0) return uri;
        string memory base = _baseTokenURI;
        return bytes(base).length != 0 ? string.concat(base, id.toString()) : "";
    }

    /// @notice Replaces the token's URI (empty string falls back to baseURI + id).
    function setTokenURI(uint256 id, string calldata uri) external onlyOperator {
        if (!editable) revert NotEditable();
        _requireOwned(id);
        _tokenURIs[id] = uri;
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

    function _baseURI() internal view override returns (string memory) {
        return _baseTokenURI;
    }

    function supportsInterface(bytes4 interfaceId) public view override(ERC721, IERC165) returns (bool) {
        return interfaceId == ERC4906_INTERFACE_ID || super.supportsInterface(interfaceId);
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
