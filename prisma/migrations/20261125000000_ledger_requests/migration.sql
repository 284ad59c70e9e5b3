-- AlterTable
ALTER TABLE "credit_ledger" ADD COLUMN     "requests" INTEGER NOT NULL DEFAULT 1;
