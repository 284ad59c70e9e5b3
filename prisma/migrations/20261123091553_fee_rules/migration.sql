-- AlterTable
ALTER TABLE "calculation_chain" ADD COLUMN     "exact_rule" JSONB;

-- AlterTable
ALTER TABLE "currency" ADD COLUMN     "rate_date" DATE;
