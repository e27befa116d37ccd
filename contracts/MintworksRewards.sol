// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC2771Context} from "@openzeppelin/contracts/metatx/ERC2771Context.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Context} from "@openzeppelin/contracts/utils/Context.sol";

/**
 * @title MintworksRewards
 * @notice ERC-20 (18 decimals) rewards pool. The whole supply is minted to this contract;
 *         operators allocate amounts to user wallets, users claim them through the trusted
 *         ERC-2771 forwarder (gasless), and an operator can finally withdraw everything left
 *         (including unclaimed allocations) to `withdrawReceiver`, which closes the pool.
 *
 * Invariant while open: balanceOf(this) >= totalAllocated == sum(allocated[user]).
 */
contract MintworksRewards is ERC20, ERC2771Context, Ownable {
    /// @notice Receives the remaining balance on {withdraw}. Fixed at deployment.
    address public immutable withdrawReceiver;

    /// @notice Sum of all unclaimed allocations.
    uint256 public totalAllocated;

    /// @notice True once {withdraw} ran; allocate/claim/withdraw revert afterwards.
    bool public withdrawn;

    /// @notice Allocation refs already used (service-side ids; makes allocation retries idempotent).
    mapping(bytes32 ref => bool) public usedRef;

    mapping(address user => uint256) private _allocated;
    mapping(address account => bool) private _operators;

    event OperatorSet(address indexed account, bool enabled);
    event Allocated(address indexed user, uint256 amount, bytes32 indexed ref);
    event Claimed(address indexed user, address indexed to, uint256 amount, bytes32 indexed ref);
    event Withdrawn(address indexed receiver, uint256 amount);

    error NotOperator();
    error InsufficientSupply();
    error DuplicateRef();
    error LengthMismatch();
    error ZeroAddress();
    /// @dev Named PoolWithdrawn (not Withdrawn) because an error may not share the event's name.
    error PoolWithdrawn();

    modifier onlyOperator() {
        if (!isOperator(_msgSender())) revert NotOperator();
        _;
    }

    modifier whenOpen() {
        if (withdrawn) revert PoolWithdrawn();
        _;
    }

    constructor(
        string memory tokenName,
        string memory tokenSymbol,
        uint256 supply,
        address withdrawReceiver_,
        address trustedForwarder_,
        address[] memory operators_
    ) ERC20(tokenName, tokenSymbol) ERC2771Context(trustedForwarder_) Ownable(msg.sender) {
        // Fail at deploy time rather than at withdraw time (ERC20 rejects transfers to 0).
        if (withdrawReceiver_ == address(0)) revert ZeroAddress();
        withdrawReceiver = withdrawReceiver_;
        for (uint256 i = 0; i < operators_.length; ++i) {
            _operators[operators_[i]] = true;
            emit OperatorSet(operators_[i], true);
        }
        _mint(address(this), supply);
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

    // ------------------------------------------------------------------ views

    /// @notice Unclaimed allocation of `user`. Reads 0 once the pool is withdrawn, since those
    ///         allocations can no longer be claimed (the mapping itself cannot be cleared).
    function allocated(address user) public view returns (uint256) {
        return withdrawn ? 0 : _allocated[user];
    }

    /// @notice Tokens held by the pool that are not yet allocated.
    function available() public view returns (uint256) {
        // totalAllocated is reset on withdraw, so this cannot underflow afterwards.
        return balanceOf(address(this)) - totalAllocated;
    }

    // ------------------------------------------------------------------ allocation

    function allocate(address user, uint256 amount, bytes32 ref) external onlyOperator whenOpen {
        _allocate(user, amount, ref);
    }

    /// @notice All-or-nothing batch of {allocate}.
    function allocateBatch(
        address[] calldata users,
        uint256[] calldata amounts,
        bytes32[] calldata refs
    ) external onlyOperator whenOpen {
        uint256 n = users.length;
        if (amounts.length != n || refs.length != n) revert LengthMismatch();
        for (uint256 i = 0; i < n; ++i) {
            _allocate(users[i], amounts[i], refs[i]);
        }
    }

    function _allocate(address user, uint256 amount, bytes32 ref) private {
        if (user == address(0)) revert ZeroAddress();
        if (usedRef[ref]) revert DuplicateRef();
        if (amount > available()) revert InsufficientSupply();
        usedRef[ref] = true;
        _allocated[user] += amount;
        totalAllocated += amount;
        emit Allocated(user, amount, ref);
    }

    // ------------------------------------------------------------------ claiming

    /**
     * @notice Sends the caller's whole allocation to `to`. The caller is the user wallet as seen
     *         through the forwarder (`_msgSender()`). A zero allocation transfers nothing but still
     *         emits {Claimed}, so the service can always correlate `ref` with an event.
     * @param ref The service's claim id, echoed in the event.
     */
    function claim(address to, bytes32 ref) external whenOpen returns (uint256 amount) {
        if (to == address(0)) revert ZeroAddress();
        address user = _msgSender();
        amount = _allocated[user];
        if (amount != 0) {
            // Effects before the transfer (checks-effects-interactions; _transfer has no hooks anyway).
            _allocated[user] = 0;
            totalAllocated -= amount;
            _transfer(address(this), to, amount);
        }
        emit Claimed(user, to, amount, ref);
    }

    // ------------------------------------------------------------------ closing

    /// @notice Sends the whole remaining balance (unclaimed allocations included) to
    ///         `withdrawReceiver` and closes the pool for good.
    function withdraw() external onlyOperator whenOpen {
        withdrawn = true;
        totalAllocated = 0;
        uint256 amount = balanceOf(address(this));
        if (amount != 0) _transfer(address(this), withdrawReceiver, amount);
        emit Withdrawn(withdrawReceiver, amount);
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
