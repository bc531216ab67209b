import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { AccountMonth as _terse_metering_v1_AccountMonth, AccountMonth__Output as _terse_metering_v1_AccountMonth__Output } from './terse/metering/v1/AccountMonth';
import type { EventResult as _terse_metering_v1_EventResult, EventResult__Output as _terse_metering_v1_EventResult__Output } from './terse/metering/v1/EventResult';
import type { MeteringClient as _terse_metering_v1_MeteringClient, MeteringDefinition as _terse_metering_v1_MeteringDefinition } from './terse/metering/v1/Metering';
import type { RecordUsageRequest as _terse_metering_v1_RecordUsageRequest, RecordUsageRequest__Output as _terse_metering_v1_RecordUsageRequest__Output } from './terse/metering/v1/RecordUsageRequest';
import type { RecordUsageResponse as _terse_metering_v1_RecordUsageResponse, RecordUsageResponse__Output as _terse_metering_v1_RecordUsageResponse__Output } from './terse/metering/v1/RecordUsageResponse';
import type { UsageEvent as _terse_metering_v1_UsageEvent, UsageEvent__Output as _terse_metering_v1_UsageEvent__Output } from './terse/metering/v1/UsageEvent';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  terse: {
    metering: {
      v1: {
        AccountMonth: MessageTypeDefinition<_terse_metering_v1_AccountMonth, _terse_metering_v1_AccountMonth__Output>
        EventResult: MessageTypeDefinition<_terse_metering_v1_EventResult, _terse_metering_v1_EventResult__Output>
        Metering: SubtypeConstructor<typeof grpc.Client, _terse_metering_v1_MeteringClient> & { service: _terse_metering_v1_MeteringDefinition }
        RecordUsageRequest: MessageTypeDefinition<_terse_metering_v1_RecordUsageRequest, _terse_metering_v1_RecordUsageRequest__Output>
        RecordUsageResponse: MessageTypeDefinition<_terse_metering_v1_RecordUsageResponse, _terse_metering_v1_RecordUsageResponse__Output>
        UsageEvent: MessageTypeDefinition<_terse_metering_v1_UsageEvent, _terse_metering_v1_UsageEvent__Output>
      }
    }
  }
}

