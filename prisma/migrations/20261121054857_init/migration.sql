-- CreateEnum
CREATE TYPE "fee_arithmetic" AS ENUM ('add', 'sub', 'mul', 'div');

-- CreateEnum
CREATE TYPE "convert_mode" AS ENUM ('auto', 'fixed');

-- CreateEnum
CREATE TYPE "group_rule" AS ENUM ('min', 'max', 'avg');

-- CreateEnum
CREATE TYPE "step_kind" AS ENUM ('fee', 'convert', 'convert_operator_group');

-- CreateEnum
CREATE TYPE "fee_purpose" AS ENUM ('deposit', 'sale', 'withdraw');

-- CreateEnum
CREATE TYPE "quote_side" AS ENUM ('ask', 'bid');

-- CreateTable
CREATE TABLE "website" (
    "code" VARCHAR(32) NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT,
    "category" TEXT NOT NULL,
    "sub_category" TEXT,
    "is_deprecated" BOOLEAN NOT NULL DEFAULT false,
    "currency_code" VARCHAR(16) NOT NULL,

    CONSTRAINT "website_pkey" PRIMARY KEY ("code")
);

-- CreateTable
CREATE TABLE "currency" (
    "id" SERIAL NOT NULL,
    "code" VARCHAR(16) NOT NULL,
    "name" TEXT,
    "kind" TEXT NOT NULL,
    "usd_rate" DECIMAL(38,18) NOT NULL,
    "owner_user_id" TEXT,
    "is_official" BOOLEAN NOT NULL DEFAULT true,
    "is_deleted" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "currency_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "calculation_chain" (
    "id" SERIAL NOT NULL,
    "key" TEXT NOT NULL,
    "name" TEXT,
    "start_currency_code" VARCHAR(16),
    "is_official" BOOLEAN NOT NULL DEFAULT true,

    CONSTRAINT "calculation_chain_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "fee_operator" (
    "id" SERIAL NOT NULL,
    "key" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "operator" "fee_arithmetic" NOT NULL,
    "value" DECIMAL(38,18) NOT NULL,
    "currency_code" VARCHAR(16),

    CONSTRAINT "fee_operator_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "convert_operator" (
    "id" SERIAL NOT NULL,
    "key" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "from_currency_id" INTEGER NOT NULL,
    "to_currency_id" INTEGER NOT NULL,
    "mode" "convert_mode" NOT NULL,
    "rate" DECIMAL(38,18),

    CONSTRAINT "convert_operator_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "convert_operator_group" (
    "id" SERIAL NOT NULL,
    "key" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "rule" "group_rule" NOT NULL,

    CONSTRAINT "convert_operator_group_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "convert_operator_group_member" (
    "group_id" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "convert_operator_id" INTEGER NOT NULL,

    CONSTRAINT "convert_operator_group_member_pkey" PRIMARY KEY ("group_id","position")
);

-- CreateTable
CREATE TABLE "chain_step" (
    "chain_id" INTEGER NOT NULL,
    "position" INTEGER NOT NULL,
    "kind" "step_kind" NOT NULL,
    "fee_operator_id" INTEGER,
    "convert_operator_id" INTEGER,
    "group_id" INTEGER,

    CONSTRAINT "chain_step_pkey" PRIMARY KEY ("chain_id","position")
);

-- CreateTable
CREATE TABLE "fee_schedule_slot" (
    "website_code" VARCHAR(32) NOT NULL,
    "purpose" "fee_purpose" NOT NULL,
    "chain_id" INTEGER NOT NULL,

    CONSTRAINT "fee_schedule_slot_pkey" PRIMARY KEY ("website_code","purpose")
);

-- CreateTable
CREATE TABLE "item" (
    "id" SERIAL NOT NULL,
    "app_id" VARCHAR(16) NOT NULL,
    "market_hash_name" VARCHAR(255) NOT NULL,

    CONSTRAINT "item_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "source_quote" (
    "id" BIGSERIAL NOT NULL,
    "item_id" INTEGER NOT NULL,
    "market_code" VARCHAR(32) NOT NULL,
    "provider_code" VARCHAR(32) NOT NULL,
    "side" "quote_side" NOT NULL,
    "currency_code" VARCHAR(16) NOT NULL,
    "price" DECIMAL(38,10),
    "quantity" INTEGER,
    "is_quantity_minimum" BOOLEAN,
    "is_all_items_same_price" BOOLEAN,
    "changed_at" TIMESTAMPTZ(3) NOT NULL,
    "observed_at" TIMESTAMPTZ(3),
    "delisted_at" TIMESTAMPTZ(3),
    "fresh_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "source_quote_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "market_scan" (
    "market_code" VARCHAR(32) NOT NULL,
    "provider_code" VARCHAR(32) NOT NULL,
    "completed_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "market_scan_pkey" PRIMARY KEY ("market_code","provider_code")
);

-- CreateTable
CREATE TABLE "valuation" (
    "item_id" INTEGER NOT NULL,
    "valuation_date" DATE NOT NULL,
    "mid_amount" DECIMAL(38,10) NOT NULL,
    "ask_amount" DECIMAL(38,10) NOT NULL,
    "bid_amount" DECIMAL(38,10),
    "uncertainty" DOUBLE PRECISION NOT NULL,
    "is_two_sided" BOOLEAN NOT NULL,
    "ask_quote_count" INTEGER NOT NULL,
    "bid_quote_count" INTEGER NOT NULL,
    "computed_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "valuation_pkey" PRIMARY KEY ("item_id","valuation_date")
);

-- CreateTable
CREATE TABLE "account" (
    "id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "disabled" BOOLEAN NOT NULL DEFAULT false,
    "credits_total" BIGINT NOT NULL DEFAULT 0,
    "credits_used" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "account_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_key" (
    "id" UUID NOT NULL,
    "account_id" UUID NOT NULL,
    "prefix" VARCHAR(16) NOT NULL,
    "hash" CHAR(64) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_key_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "currency_code_key" ON "currency"("code");

-- CreateIndex
CREATE UNIQUE INDEX "calculation_chain_key_key" ON "calculation_chain"("key");

-- CreateIndex
CREATE UNIQUE INDEX "fee_operator_key_key" ON "fee_operator"("key");

-- CreateIndex
CREATE UNIQUE INDEX "convert_operator_key_key" ON "convert_operator"("key");

-- CreateIndex
CREATE INDEX "convert_operator_from_currency_id_idx" ON "convert_operator"("from_currency_id");

-- CreateIndex
CREATE INDEX "convert_operator_to_currency_id_idx" ON "convert_operator"("to_currency_id");

-- CreateIndex
CREATE UNIQUE INDEX "convert_operator_group_key_key" ON "convert_operator_group"("key");

-- CreateIndex
CREATE UNIQUE INDEX "item_app_id_market_hash_name_key" ON "item"("app_id", "market_hash_name");

-- CreateIndex
CREATE INDEX "source_quote_market_code_provider_code_idx" ON "source_quote"("market_code", "provider_code");

-- CreateIndex
CREATE UNIQUE INDEX "source_quote_item_id_market_code_provider_code_side_key" ON "source_quote"("item_id", "market_code", "provider_code", "side");

-- CreateIndex
CREATE UNIQUE INDEX "api_key_hash_key" ON "api_key"("hash");

-- CreateIndex
CREATE INDEX "api_key_account_id_idx" ON "api_key"("account_id");

-- AddForeignKey
ALTER TABLE "convert_operator" ADD CONSTRAINT "convert_operator_from_currency_id_fkey" FOREIGN KEY ("from_currency_id") REFERENCES "currency"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "convert_operator" ADD CONSTRAINT "convert_operator_to_currency_id_fkey" FOREIGN KEY ("to_currency_id") REFERENCES "currency"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "convert_operator_group_member" ADD CONSTRAINT "convert_operator_group_member_group_id_fkey" FOREIGN KEY ("group_id") REFERENCES "convert_operator_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "convert_operator_group_member" ADD CONSTRAINT "convert_operator_group_member_convert_operator_id_fkey" FOREIGN KEY ("convert_operator_id") REFERENCES "convert_operator"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "chain_step" ADD CONSTRAINT "chain_step_chain_id_fkey" FOREIGN KEY ("chain_id") REFERENCES "calculation_chain"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "chain_step" ADD CONSTRAINT "chain_step_fee_operator_id_fkey" FOREIGN KEY ("fee_operator_id") REFERENCES "fee_operator"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "chain_step" ADD CONSTRAINT "chain_step_convert_operator_id_fkey" FOREIGN KEY ("convert_operator_id") REFERENCES "convert_operator"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "chain_step" ADD CONSTRAINT "chain_step_group_id_fkey" FOREIGN KEY ("group_id") REFERENCES "convert_operator_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "fee_schedule_slot" ADD CONSTRAINT "fee_schedule_slot_website_code_fkey" FOREIGN KEY ("website_code") REFERENCES "website"("code") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "fee_schedule_slot" ADD CONSTRAINT "fee_schedule_slot_chain_id_fkey" FOREIGN KEY ("chain_id") REFERENCES "calculation_chain"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "source_quote" ADD CONSTRAINT "source_quote_item_id_fkey" FOREIGN KEY ("item_id") REFERENCES "item"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "valuation" ADD CONSTRAINT "valuation_item_id_fkey" FOREIGN KEY ("item_id") REFERENCES "item"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Each step references exactly the operator its kind names (not expressible in schema.prisma).
ALTER TABLE "chain_step" ADD CONSTRAINT "chain_step_kind_matches_operator" CHECK (
  ("kind" = 'fee' AND "fee_operator_id" IS NOT NULL AND "convert_operator_id" IS NULL AND "group_id" IS NULL) OR
  ("kind" = 'convert' AND "convert_operator_id" IS NOT NULL AND "fee_operator_id" IS NULL AND "group_id" IS NULL) OR
  ("kind" = 'convert_operator_group' AND "group_id" IS NOT NULL AND "fee_operator_id" IS NULL AND "convert_operator_id" IS NULL)
);

-- The built-in no-fee chain (spec, fee schedule slot rule 1): id 0, no steps.
INSERT INTO "calculation_chain" ("id", "key", "name", "start_currency_code", "is_official")
VALUES (0, 'builtin:no-fee', 'No fee', NULL, true);
