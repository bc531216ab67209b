// Original file: ../../proto/terse/metering/v1/metering.proto


// Original file: ../../proto/terse/metering/v1/metering.proto

export const _terse_metering_v1_EventResult_Outcome = {
  OUTCOME_UNSPECIFIED: 'OUTCOME_UNSPECIFIED',
  INSERTED: 'INSERTED',
  DUPLICATE: 'DUPLICATE',
  REJECTED: 'REJECTED',
} as const;

export type _terse_metering_v1_EventResult_Outcome =
  | 'OUTCOME_UNSPECIFIED'
  | 0
  | 'INSERTED'
  | 1
  | 'DUPLICATE'
  | 2
  | 'REJECTED'
  | 3

export type _terse_metering_v1_EventResult_Outcome__Output = typeof _terse_metering_v1_EventResult_Outcome[keyof typeof _terse_metering_v1_EventResult_Outcome]

export interface EventResult {
  'event_id'?: (string);
  'outcome'?: (_terse_metering_v1_EventResult_Outcome);
  'reason'?: (string);
}

export interface EventResult__Output {
  'event_id': (string);
  'outcome': (_terse_metering_v1_EventResult_Outcome__Output);
  'reason': (string);
}
