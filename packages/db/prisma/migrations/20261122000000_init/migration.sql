-- CreateEnum
CREATE TYPE "Plan" AS ENUM ('free', 'pro', 'team', 'enterprise');

-- CreateEnum
CREATE TYPE "Intensity" AS ENUM ('lite', 'full', 'ultra');

-- CreateEnum
CREATE TYPE "ContextCompressLevel" AS ENUM ('conservative', 'standard', 'aggressive');

-- CreateTable
CREATE TABLE "accounts" (
    "id" TEXT NOT NULL,
    "email" TEXT,
    "password_hash" TEXT,
    "plan" "Plan" NOT NULL DEFAULT 'free',
    "external_iss" TEXT,
    "external_sub" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "accounts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "service_keys" (
    "id" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "key_hash" CHAR(64) NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "intensity" "Intensity" NOT NULL DEFAULT 'full',
    "auto_compress_input" BOOLEAN NOT NULL DEFAULT false,
    "smart_detect_enabled" BOOLEAN NOT NULL DEFAULT true,
    "context_compress" BOOLEAN NOT NULL DEFAULT false,
    "context_compress_level" "ContextCompressLevel" NOT NULL DEFAULT 'standard',
    "is_active" BOOLEAN NOT NULL DEFAULT true,
    "rate_limit_rpm" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    "rotated_to_id" TEXT,

    CONSTRAINT "service_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "usage_events" (
    "event_id" TEXT NOT NULL,
    "key_id" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "status" INTEGER NOT NULL,
    "streamed" BOOLEAN NOT NULL,
    "input_tokens" INTEGER NOT NULL,
    "output_tokens" INTEGER NOT NULL,
    "input_tokens_before_compression" INTEGER NOT NULL,
    "estimated" BOOLEAN NOT NULL DEFAULT false,
    "intensity" TEXT,
    "compression_reason" TEXT,
    "latency_ms" INTEGER NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "usage_events_pkey" PRIMARY KEY ("event_id")
);

-- CreateTable
CREATE TABLE "account_monthly_usage" (
    "account_id" TEXT NOT NULL,
    "month" DATE NOT NULL,
    "tokens" BIGINT NOT NULL DEFAULT 0,
    "requests" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "account_monthly_usage_pkey" PRIMARY KEY ("account_id","month")
);

-- CreateTable
CREATE TABLE "key_monthly_usage" (
    "key_id" TEXT NOT NULL,
    "month" DATE NOT NULL,
    "tokens" BIGINT NOT NULL DEFAULT 0,
    "requests" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "key_monthly_usage_pkey" PRIMARY KEY ("key_id","month")
);

-- CreateIndex
CREATE UNIQUE INDEX "accounts_email_key" ON "accounts"("email");

-- CreateIndex
CREATE UNIQUE INDEX "accounts_external_iss_external_sub_key" ON "accounts"("external_iss", "external_sub");

-- CreateIndex
CREATE UNIQUE INDEX "service_keys_key_hash_key" ON "service_keys"("key_hash");

-- CreateIndex
CREATE INDEX "service_keys_account_id_created_at_idx" ON "service_keys"("account_id", "created_at" DESC);

-- Not expressible in schema.prisma: names are unique among an account's ACTIVE keys only,
-- enforced by Postgres so that concurrent creates cannot both win.
CREATE UNIQUE INDEX "service_keys_account_id_name_active_key" ON "service_keys"("account_id", "name") WHERE "is_active";

-- CreateIndex
CREATE INDEX "usage_events_account_id_started_at_idx" ON "usage_events"("account_id", "started_at");

-- CreateIndex
CREATE INDEX "usage_events_key_id_started_at_idx" ON "usage_events"("key_id", "started_at");

-- AddForeignKey
ALTER TABLE "service_keys" ADD CONSTRAINT "service_keys_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "usage_events" ADD CONSTRAINT "usage_events_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "usage_events" ADD CONSTRAINT "usage_events_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "service_keys"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "account_monthly_usage" ADD CONSTRAINT "account_monthly_usage_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "key_monthly_usage" ADD CONSTRAINT "key_monthly_usage_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "service_keys"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
