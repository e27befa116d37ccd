import { rewardsSuite } from './rewards-suite.js';

rewardsSuite('postgres');
