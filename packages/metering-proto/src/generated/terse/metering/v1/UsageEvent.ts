// Original file: ../../proto/terse/metering/v1/metering.proto

import type { Long } from '@grpc/proto-loader';

export interface UsageEvent {
  'event_id'?: (string);
  'key_id'?: (string);
  'account_id'?: (string);
  'provider'?: (string);
  'model'?: (string);
  'status'?: (number);
  'streamed'?: (boolean);
  'input_tokens'?: (number | string | Long);
  'output_tokens'?: (number | string | Long);
  'input_tokens_before_compression'?: (number | string | Long);
  'estimated'?: (boolean);
  'intensity'?: (string);
  'compression_reason'?: (string);
  'latency_ms'?: (number | string | Long);
  'started_at'?: (string);
  'cache_read_tokens'?: (number | string | Long);
  'cache_write_tokens'?: (number | string | Long);
  'recall_rounds'?: (number);
  'cache_read_tokens_before_compression'?: (number | string | Long);
  'cache_write_tokens_before_compression'?: (number | string | Long);
}

export interface UsageEvent__Output {
  'event_id': (string);
  'key_id': (string);
  'account_id': (string);
  'provider': (string);
  'model': (string);
  'status': (number);
  'streamed': (boolean);
  'input_tokens': (number);
  'output_tokens': (number);
  'input_tokens_before_compression': (number);
  'estimated': (boolean);
  'intensity': (string);
  'compression_reason': (string);
  'latency_ms': (number);
  'started_at': (string);
  'cache_read_tokens': (number);
  'cache_write_tokens': (number);
  'recall_rounds': (number);
  'cache_read_tokens_before_compression': (number);
  'cache_write_tokens_before_compression': (number);
}
