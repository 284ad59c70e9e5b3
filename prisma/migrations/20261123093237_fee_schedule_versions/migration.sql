-- AlterTable
ALTER TABLE "fee_schedule_slot" DROP CONSTRAINT "fee_schedule_slot_pkey",
ADD COLUMN     "valid_from" DATE NOT NULL DEFAULT '1970-01-01'::date,
ADD CONSTRAINT "fee_schedule_slot_pkey" PRIMARY KEY ("website_code", "purpose", "valid_from");
