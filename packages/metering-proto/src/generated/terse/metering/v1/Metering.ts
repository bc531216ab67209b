// Original file: ../../proto/terse/metering/v1/metering.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { RecordUsageRequest as _terse_metering_v1_RecordUsageRequest, RecordUsageRequest__Output as _terse_metering_v1_RecordUsageRequest__Output } from '../../../terse/metering/v1/RecordUsageRequest';
import type { RecordUsageResponse as _terse_metering_v1_RecordUsageResponse, RecordUsageResponse__Output as _terse_metering_v1_RecordUsageResponse__Output } from '../../../terse/metering/v1/RecordUsageResponse';

export interface MeteringClient extends grpc.Client {
  RecordUsage(argument: _terse_metering_v1_RecordUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_terse_metering_v1_RecordUsageResponse__Output>): grpc.ClientUnaryCall;
  RecordUsage(argument: _terse_metering_v1_RecordUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_terse_metering_v1_RecordUsageResponse__Output>): grpc.ClientUnaryCall;
  RecordUsage(argument: _terse_metering_v1_RecordUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_terse_metering_v1_RecordUsageResponse__Output>): grpc.ClientUnaryCall;
  RecordUsage(argument: _terse_metering_v1_RecordUsageRequest, callback: grpc.requestCallback<_terse_metering_v1_RecordUsageResponse__Output>): grpc.ClientUnaryCall;
  recordUsage(argument: _terse_metering_v1_RecordUsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_terse_metering_v1_RecordUsageResponse__Output>): grpc.ClientUnaryCall;
  recordUsage(argument: _terse_metering_v1_RecordUsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_terse_metering_v1_RecordUsageResponse__Output>): grpc.ClientUnaryCall;
  recordUsage(argument: _terse_metering_v1_RecordUsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_terse_metering_v1_RecordUsageResponse__Output>): grpc.ClientUnaryCall;
  recordUsage(argument: _terse_metering_v1_RecordUsageRequest, callback: grpc.requestCallback<_terse_metering_v1_RecordUsageResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface MeteringHandlers extends grpc.UntypedServiceImplementation {
  RecordUsage: grpc.handleUnaryCall<_terse_metering_v1_RecordUsageRequest__Output, _terse_metering_v1_RecordUsageResponse>;
  
}

export interface MeteringDefinition extends grpc.ServiceDefinition {
  RecordUsage: MethodDefinition<_terse_metering_v1_RecordUsageRequest, _terse_metering_v1_RecordUsageResponse, _terse_metering_v1_RecordUsageRequest__Output, _terse_metering_v1_RecordUsageResponse__Output>
}
