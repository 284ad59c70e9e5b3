-- CreateEnum
CREATE TYPE "history_series" AS ENUM ('ask', 'bid', 'listing_minimum', 'sales');

-- AlterTable
ALTER TABLE "daily_close" ADD COLUMN     "compacted" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "high_price" DECIMAL(38,10),
ADD COLUMN     "low_price" DECIMAL(38,10),
ADD COLUMN     "observations" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "open_price" DECIMAL(38,10);

-- CreateTable
CREATE TABLE "candle_month" (
    "item_id" INTEGER NOT NULL,
    "market_code" VARCHAR(32) NOT NULL,
    "provider_code" VARCHAR(32) NOT NULL,
    "series" "history_series" NOT NULL,
    "month" DATE NOT NULL,
    "currency_code" VARCHAR(16) NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "candle_month_pkey" PRIMARY KEY ("item_id","market_code","provider_code","series","month")
);

-- Closes written before candles existed: their day's candle is the close alone (observation count unknown: 0).
UPDATE "daily_close" SET "open_price" = "price", "high_price" = "price", "low_price" = "price" WHERE "price" IS NOT NULL;
