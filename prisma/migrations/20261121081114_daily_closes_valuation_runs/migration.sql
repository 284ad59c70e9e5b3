-- CreateTable
CREATE TABLE "daily_close" (
    "item_id" INTEGER NOT NULL,
    "market_code" VARCHAR(32) NOT NULL,
    "provider_code" VARCHAR(32) NOT NULL,
    "side" "quote_side" NOT NULL,
    "day" DATE NOT NULL,
    "currency_code" VARCHAR(16) NOT NULL,
    "price" DECIMAL(38,10),
    "quantity" INTEGER,
    "delisted" BOOLEAN NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL,
    "confirmed_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "daily_close_pkey" PRIMARY KEY ("item_id","market_code","provider_code","side","day")
);

-- CreateTable
CREATE TABLE "valuation_run" (
    "valuation_date" DATE NOT NULL,
    "computed_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "item_count" INTEGER NOT NULL,
    "two_sided_count" INTEGER NOT NULL,
    "stats" JSONB NOT NULL,

    CONSTRAINT "valuation_run_pkey" PRIMARY KEY ("valuation_date")
);

-- CreateIndex
CREATE INDEX "daily_close_day_idx" ON "daily_close"("day");
