// Original file: ../../proto/terse/metering/v1/metering.proto

import type { UsageEvent as _terse_metering_v1_UsageEvent, UsageEvent__Output as _terse_metering_v1_UsageEvent__Output } from '../../../terse/metering/v1/UsageEvent';

export interface RecordUsageRequest {
  'events'?: (_terse_metering_v1_UsageEvent)[];
}

export interface RecordUsageRequest__Output {
  'events': (_terse_metering_v1_UsageEvent__Output)[];
}
