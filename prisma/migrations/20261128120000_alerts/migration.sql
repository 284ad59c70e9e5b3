-- Webhook alerts (issue 44, point 3; docs/alerts.md; src/alerts/alerts.ts): the alerts, their delivery log (the
-- delivery queue, claimed FOR UPDATE SKIP LOCKED) and the evaluator's cursor in the change sequence, which starts at
-- the newest change: alerts are judged on changes after they exist.

-- CreateTable
CREATE TABLE "alert" (
    "id" UUID NOT NULL,
    "account_id" VARCHAR(128) NOT NULL,
    "key_id" UUID NOT NULL,
    "kind" VARCHAR(16) NOT NULL,
    "item_id" INTEGER NOT NULL,
    "market_code" VARCHAR(32),
    "side" VARCHAR(4),
    "direction" VARCHAR(8),
    "level" DECIMAL(38,10),
    "buy_market" VARCHAR(32),
    "sell_market" VARCHAR(32),
    "margin" DECIMAL(38,10),
    "fund" VARCHAR(8),
    "payout" VARCHAR(8),
    "url" TEXT NOT NULL,
    "secret" VARCHAR(80) NOT NULL,
    "holding" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "disabled_at" TIMESTAMPTZ(3),
    "disabled_reason" VARCHAR(64),

    CONSTRAINT "alert_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "alert_delivery" (
    "seq" BIGSERIAL NOT NULL,
    "id" UUID NOT NULL,
    "alert_id" UUID NOT NULL,
    "account_id" VARCHAR(128) NOT NULL,
    "payload" TEXT NOT NULL,
    "status" VARCHAR(16) NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL,
    "locked_until" TIMESTAMPTZ(3),
    "charged" BOOLEAN NOT NULL DEFAULT false,
    "last_status_code" INTEGER,
    "last_error" VARCHAR(64),
    "response_excerpt" VARCHAR(256),
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "last_attempt_at" TIMESTAMPTZ(3),
    "delivered_at" TIMESTAMPTZ(3),

    CONSTRAINT "alert_delivery_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "alert_cursor" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "last_seq" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "alert_cursor_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "alert_account_id_created_at_idx" ON "alert"("account_id", "created_at");

-- CreateIndex
CREATE INDEX "alert_item_id_idx" ON "alert"("item_id");

-- CreateIndex
CREATE UNIQUE INDEX "alert_delivery_id_key" ON "alert_delivery"("id");

-- CreateIndex
CREATE INDEX "alert_delivery_alert_id_seq_idx" ON "alert_delivery"("alert_id", "seq");

-- CreateIndex
CREATE INDEX "alert_delivery_status_next_attempt_at_idx" ON "alert_delivery"("status", "next_attempt_at");

-- AddForeignKey
ALTER TABLE "alert_delivery" ADD CONSTRAINT "alert_delivery_alert_id_fkey" FOREIGN KEY ("alert_id") REFERENCES "alert"("id") ON DELETE CASCADE ON UPDATE CASCADE;

INSERT INTO "alert_cursor" ("id", "last_seq") SELECT 1, COALESCE(MAX("seq"), 0) FROM "quote_change";
