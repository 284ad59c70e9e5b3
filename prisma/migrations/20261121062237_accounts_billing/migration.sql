-- DropForeignKey
ALTER TABLE "api_key" DROP CONSTRAINT "api_key_account_id_fkey";

-- AlterTable
ALTER TABLE "account" DROP CONSTRAINT "account_pkey",
ADD COLUMN     "base_currency" VARCHAR(16),
ADD COLUMN     "email" TEXT,
ADD COLUMN     "email_verified" BOOLEAN,
ADD COLUMN     "image" TEXT,
ADD COLUMN     "name" TEXT,
ADD COLUMN     "profile_synced_at" TIMESTAMPTZ(3),
ADD COLUMN     "steam_id" TEXT,
ADD COLUMN     "user_created_at" TIMESTAMPTZ(3),
ALTER COLUMN "id" SET DATA TYPE VARCHAR(128),
ADD CONSTRAINT "account_pkey" PRIMARY KEY ("id");

-- AlterTable
ALTER TABLE "api_key" ADD COLUMN     "allowed_operations" TEXT[],
ADD COLUMN     "name" TEXT,
ALTER COLUMN "account_id" SET DATA TYPE VARCHAR(128);

-- CreateTable
CREATE TABLE "subscription" (
    "id" BIGSERIAL NOT NULL,
    "account_id" VARCHAR(128) NOT NULL,
    "category" VARCHAR(64) NOT NULL,
    "plan_id" VARCHAR(128) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "subscription_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "credit_ledger" (
    "id" BIGSERIAL NOT NULL,
    "account_id" VARCHAR(128) NOT NULL,
    "kind" VARCHAR(16) NOT NULL,
    "amount" BIGINT NOT NULL,
    "operation_id" VARCHAR(64),
    "request_id" VARCHAR(64),
    "key_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "credit_ledger_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "service_token" (
    "id" UUID NOT NULL,
    "name" VARCHAR(128) NOT NULL,
    "role" VARCHAR(16) NOT NULL,
    "prefix" VARCHAR(16) NOT NULL,
    "hash" CHAR(64) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "service_token_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "subscription_account_id_expires_at_idx" ON "subscription"("account_id", "expires_at");

-- CreateIndex
CREATE INDEX "credit_ledger_account_id_id_idx" ON "credit_ledger"("account_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "service_token_hash_key" ON "service_token"("hash");

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "credit_ledger" ADD CONSTRAINT "credit_ledger_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Hand-written (Prisma does not model these): ledger kinds, non-negative counters, and the ledger
-- backfilled for accounts made before it existed, so counters and ledger agree from the start.
ALTER TABLE "credit_ledger" ADD CONSTRAINT "credit_ledger_kind_check"
    CHECK ("kind" IN ('charge', 'grant', 'sync') AND ("kind" <> 'charge' OR "amount" > 0));
ALTER TABLE "account" ADD CONSTRAINT "account_credits_check" CHECK ("credits_total" >= 0 AND "credits_used" >= 0);
ALTER TABLE "service_token" ADD CONSTRAINT "service_token_role_check" CHECK ("role" IN ('machine', 'admin'));
INSERT INTO "credit_ledger" ("account_id", "kind", "amount") SELECT "id", 'grant', "credits_total" FROM "account" WHERE "credits_total" <> 0;
INSERT INTO "credit_ledger" ("account_id", "kind", "amount") SELECT "id", 'charge', "credits_used" FROM "account" WHERE "credits_used" > 0;
UPDATE "account" SET "profile_synced_at" = "created_at";
