import { rewardsSuite } from './rewards-suite.js';

rewardsSuite('sqlite');
