-- AlterTable
ALTER TABLE "valuation" ADD COLUMN     "ask_uncertainty" DOUBLE PRECISION,
ADD COLUMN     "bid_uncertainty" DOUBLE PRECISION;

-- CreateTable
CREATE TABLE "valuation_learning" (
    "valuation_date" DATE NOT NULL,
    "stats" JSONB NOT NULL,
    "computed_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "valuation_learning_pkey" PRIMARY KEY ("valuation_date")
);

-- The accuracy series is scored again (by the valuation job at its next start) so that every scored day
-- also writes its learning row; the scoring is idempotent and reads only valuations and closes.
DELETE FROM "valuation_accuracy";
