// Original file: ../../proto/terse/metering/v1/metering.proto

import type { EventResult as _terse_metering_v1_EventResult, EventResult__Output as _terse_metering_v1_EventResult__Output } from '../../../terse/metering/v1/EventResult';
import type { AccountMonth as _terse_metering_v1_AccountMonth, AccountMonth__Output as _terse_metering_v1_AccountMonth__Output } from '../../../terse/metering/v1/AccountMonth';

export interface RecordUsageResponse {
  'results'?: (_terse_metering_v1_EventResult)[];
  'accounts'?: (_terse_metering_v1_AccountMonth)[];
}

export interface RecordUsageResponse__Output {
  'results': (_terse_metering_v1_EventResult__Output)[];
  'accounts': (_terse_metering_v1_AccountMonth__Output)[];
}
