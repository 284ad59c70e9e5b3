-- AlterTable
ALTER TABLE "export_build" ADD COLUMN     "change_seq" BIGINT;

-- CreateTable
CREATE TABLE "quote_change" (
    "seq" BIGSERIAL NOT NULL,
    "item_id" INTEGER NOT NULL,
    "market_code" VARCHAR(32) NOT NULL,
    "side" VARCHAR(4) NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "quote_change_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "quote_change_horizon" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "pruned_through" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "quote_change_horizon_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "quote_change_recorded_at_idx" ON "quote_change"("recorded_at");

-- AddForeignKey
ALTER TABLE "quote_change" ADD CONSTRAINT "quote_change_item_id_fkey" FOREIGN KEY ("item_id") REFERENCES "item"("id") ON DELETE CASCADE ON UPDATE CASCADE;

INSERT INTO "quote_change_horizon" ("id", "pruned_through") VALUES (1, 0);
