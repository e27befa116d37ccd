// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC2771Forwarder} from "@openzeppelin/contracts/metatx/ERC2771Forwarder.sol";

/**
 * @title MintworksForwarder
 * @notice Trusted ERC-2771 forwarder: the service relays (and pays gas for) requests signed by
 *         end-user wallets that hold no ETH. EIP-712 domain: name "MintworksForwarder", version "1".
 */
contract MintworksForwarder is ERC2771Forwarder {
    constructor() ERC2771Forwarder("MintworksForwarder") {}
}
